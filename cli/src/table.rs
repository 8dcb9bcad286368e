//! Tables whose columns are as wide as their widest cell, so long names,
//! time zones and status words never push a row out of line. One column
//! may be flexible: when the table must fit a width (a terminal's), its
//! cells are shortened with an ellipsis in the middle, which keeps both a
//! function's package and its method.

/// How a column's cells sit in its width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Right,
}

#[derive(Debug, Clone)]
struct Column {
    header: String,
    align: Align,
    /// Written before the column (none before the first).
    gap: &'static str,
}

/// Rows of text cells under a header line.
#[derive(Debug, Clone, Default)]
pub(crate) struct Table {
    columns: Vec<Column>,
    rows: Vec<Vec<String>>,
    /// The column shortened to fit [`Table::fit`]'s width.
    flexible: Option<usize>,
    width: Option<usize>,
}

/// The least a flexible column is shortened to, whatever the width.
const MIN_FLEXIBLE: usize = 16;

impl Table {
    pub(crate) fn new() -> Table {
        Table::default()
    }

    fn column(mut self, header: &str, align: Align, gap: &'static str) -> Table {
        let gap = if self.columns.is_empty() { "" } else { gap };
        self.columns.push(Column {
            header: header.to_owned(),
            align,
            gap,
        });
        self
    }

    pub(crate) fn left(self, header: &str) -> Table {
        self.column(header, Align::Left, "  ")
    }

    pub(crate) fn right(self, header: &str) -> Table {
        self.column(header, Align::Right, "  ")
    }

    /// A column one space from the previous one (a share's `± error`).
    pub(crate) fn left_close(self, header: &str) -> Table {
        self.column(header, Align::Left, " ")
    }

    /// The column last added is the one shortened to fit a width.
    pub(crate) fn flexible(mut self) -> Table {
        self.flexible = self.columns.len().checked_sub(1);
        self
    }

    /// Rows at most `width` characters wide, when given, by shortening
    /// the flexible column (never below a readable minimum).
    pub(crate) fn fit(mut self, width: Option<usize>) -> Table {
        self.width = width;
        self
    }

    pub(crate) fn row<I, S>(&mut self, cells: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut row: Vec<String> = cells.into_iter().map(Into::into).collect();
        row.resize(self.columns.len(), String::new());
        self.rows.push(row);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The header and the rows, each line ended by a newline and without
    /// trailing spaces.
    pub(crate) fn render(&self) -> String {
        let mut widths: Vec<usize> = self.columns.iter().map(|c| chars(&c.header)).collect();
        for row in &self.rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(chars(cell));
            }
        }
        let mut limit = None;
        if let (Some(flexible), Some(width)) = (self.flexible, self.width) {
            let others: usize = widths
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != flexible)
                .map(|(_, w)| w)
                .sum::<usize>()
                + self.columns.iter().map(|c| c.gap.len()).sum::<usize>();
            let room = width.saturating_sub(others).max(MIN_FLEXIBLE);
            if room < widths[flexible] {
                widths[flexible] = room.max(chars(&self.columns[flexible].header));
                limit = Some((flexible, widths[flexible]));
            }
        }
        let header: Vec<String> = self.columns.iter().map(|c| c.header.clone()).collect();
        let mut out = String::new();
        for row in std::iter::once(&header).chain(&self.rows) {
            let mut line = String::new();
            for (i, (column, cell)) in self.columns.iter().zip(row).enumerate() {
                let cell = match limit {
                    Some((at, max)) if at == i => ellipsize(cell, max),
                    _ => cell.clone(),
                };
                let pad = widths[i].saturating_sub(chars(&cell));
                line.push_str(column.gap);
                match column.align {
                    Align::Left => {
                        line.push_str(&cell);
                        line.extend(std::iter::repeat_n(' ', pad));
                    }
                    Align::Right => {
                        line.extend(std::iter::repeat_n(' ', pad));
                        line.push_str(&cell);
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// Characters, as a terminal draws most of ours (`±`, `ε`, `²` are one).
pub(crate) fn chars(text: &str) -> usize {
    text.chars().count()
}

/// `text` cut to at most `max` characters with `…` in the middle.
pub(crate) fn ellipsize(text: &str, max: usize) -> String {
    let count = chars(text);
    if count <= max {
        return text.to_owned();
    }
    if max <= 1 {
        return "…".chars().take(max).collect();
    }
    let keep = max - 1;
    let head = keep.div_ceil(2);
    let tail = keep - head;
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(count - tail).collect();
    format!("{start}…{end}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut table = Table::new()
            .left("function")
            .flexible()
            .right("self")
            .left_close("")
            .right("total");
        table.row(["demo_hot", "60.0%", "± 2.2", "60.0%"]);
        table.row([
            "java.lang.invoke.LambdaForm$MH+0x00007fc028009000.1003752023.invoke",
            "0.7%",
            "± 12.3",
            "100.0%",
        ]);
        table
    }

    #[test]
    fn columns_are_as_wide_as_their_widest_cell() {
        let text = sample().render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "function                                                              self          total",
                "demo_hot                                                             60.0% ± 2.2    60.0%",
                "java.lang.invoke.LambdaForm$MH+0x00007fc028009000.1003752023.invoke   0.7% ± 12.3  100.0%",
            ]
        );
    }

    #[test]
    fn the_flexible_column_shrinks_to_fit_with_an_ellipsis() {
        let text = sample().fit(Some(50)).render();
        for line in text.lines() {
            assert!(chars(line) <= 50, "{line:?}");
        }
        assert!(text.contains("java.lang.invo…752023.invoke "), "{text}");
        // Never below a readable minimum, however narrow.
        let narrow = sample().fit(Some(10)).render();
        assert!(narrow
            .lines()
            .nth(2)
            .unwrap()
            .starts_with("java.lan….invoke "));
        // Wide enough: nothing is cut.
        assert_eq!(sample().fit(Some(200)).render(), sample().render());
    }

    #[test]
    fn ellipsis_keeps_both_ends() {
        assert_eq!(ellipsize("abcdefghij", 10), "abcdefghij");
        assert_eq!(ellipsize("abcdefghij", 5), "ab…ij");
        assert_eq!(ellipsize("abcdefghij", 6), "abc…ij");
        assert_eq!(ellipsize("abcdefghij", 1), "…");
        assert_eq!(ellipsize("±±±±", 3), "±…±");
    }
}
