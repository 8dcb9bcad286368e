//! How wide the tables may be: a terminal's width when standard output is
//! one (so long function names are shortened rather than wrapped), no
//! limit when it is a pipe or a file, or with `--wide`.

use std::io::IsTerminal as _;

/// The width tables are fitted to, if any.
pub(crate) fn table_width(wide: bool) -> Option<usize> {
    if wide || !std::io::stdout().is_terminal() {
        return None;
    }
    columns_env().or_else(stty_columns)
}

/// `COLUMNS`, when the shell exports it.
fn columns_env() -> Option<usize> {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .filter(|&n: &usize| n > 0)
}

/// The terminal's columns as `stty size` reports them (rows, then
/// columns), asked of the controlling terminal.
fn stty_columns() -> Option<usize> {
    let tty = std::fs::File::open("/dev/tty").ok()?;
    let output = std::process::Command::new("stty")
        .arg("size")
        .stdin(tty)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    parse_stty_size(&String::from_utf8_lossy(&output.stdout))
}

fn parse_stty_size(text: &str) -> Option<usize> {
    let columns = text.split_whitespace().nth(1)?.parse().ok()?;
    (columns > 0).then_some(columns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stty_reports_rows_then_columns() {
        assert_eq!(parse_stty_size("50 132\n"), Some(132));
        assert_eq!(parse_stty_size("0 0\n"), None);
        assert_eq!(parse_stty_size(""), None);
        assert_eq!(table_width(true), None);
    }
}
