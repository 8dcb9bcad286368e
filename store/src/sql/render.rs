//! Writes a statement in Postgres' notation for the backend it runs on.

use crate::{Result, StoreError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dialect {
    Postgres,
    MySql,
}

/// How an argument is written where its `$n` stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// One parameter.
    One,
    /// `(v1, v2, …)`, one parameter per element; `(null)` when empty.
    List(usize),
    /// A length of time: `make_interval(secs => $n)` in Postgres,
    /// `interval ? microsecond` in MySQL (bound as seconds and as
    /// microseconds).
    Interval,
}

impl Shape {
    fn elements(self) -> usize {
        match self {
            Shape::List(n) => n,
            Shape::One | Shape::Interval => 1,
        }
    }
}

/// The tokens a shared statement may use, and what each backend writes.
const TOKENS: &[(&str, &str, &str)] = &[
    ("{now}", "now()", "now(6)"),
    ("{clock}", "clock_timestamp()", "now(6)"),
];

/// `text` for `dialect`, and the values to bind in order, as
/// `(argument, element)` indexes into the statement's arguments (element
/// 0 for a single value): Postgres binds each value once, by number;
/// MySQL binds one per `?`, so a parameter used twice is bound twice.
/// Each argument is written as its [`Shape`] says; an empty list as
/// `(null)`, which matches nothing, where `()` would be a syntax error.
///
/// A parameter number past the arguments, or an argument no `$n` uses,
/// is a mistake in the statement, reported rather than sent.
pub(super) fn render(
    text: &str,
    shapes: &[Shape],
    dialect: Dialect,
) -> Result<(String, Vec<(usize, usize)>)> {
    let mut out = String::with_capacity(text.len());
    let mut order = Vec::new();
    // Postgres: the number each argument's first element was given.
    let mut numbered: Vec<Option<usize>> = vec![None; shapes.len()];
    let mut rest = text;
    while let Some(at) = rest.find(['$', '\'', '"', '{']) {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if rest.starts_with('"') {
            // A quoted identifier (a column named like a keyword): MySQL
            // quotes with backticks unless in ANSI_QUOTES mode.
            let end = rest[1..].find('"').map_or(rest.len(), |i| i + 2);
            match dialect {
                Dialect::Postgres => out.push_str(&rest[..end]),
                Dialect::MySql => {
                    out.push('`');
                    out.push_str(rest[1..end].trim_end_matches('"'));
                    out.push('`');
                }
            }
            rest = &rest[end..];
        } else if rest.starts_with('\'') {
            // A string literal is copied as it is, `''` escapes included.
            let end = rest[1..].find('\'').map_or(rest.len(), |i| i + 2);
            out.push_str(&rest[..end]);
            rest = &rest[end..];
        } else if rest.starts_with('{') {
            let (token, written) = token(rest, dialect)?;
            out.push_str(written);
            rest = &rest[token.len()..];
        } else {
            let digits = rest[1..].bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                out.push('$');
                rest = &rest[1..];
                continue;
            }
            let number: usize = rest[1..=digits].parse().unwrap_or(usize::MAX);
            let index = number
                .checked_sub(1)
                .filter(|&i| i < shapes.len())
                .ok_or_else(|| mistake(text, format!("${number} has no argument")))?;
            let shape = shapes[index];
            let elements = shape.elements();
            let placeholders: Vec<String> = match dialect {
                Dialect::MySql => {
                    order.extend((0..elements).map(|element| (index, element)));
                    vec!["?".to_owned(); elements]
                }
                Dialect::Postgres => {
                    let first = *numbered[index].get_or_insert_with(|| {
                        order.extend((0..elements).map(|element| (index, element)));
                        order.len() - elements + 1
                    });
                    (first..first + elements).map(|n| format!("${n}")).collect()
                }
            };
            numbered[index].get_or_insert(0);
            match (shape, dialect) {
                (Shape::One, _) => out.push_str(&placeholders[0]),
                (Shape::List(0), _) => out.push_str("(null)"),
                (Shape::List(_), _) => {
                    out.push('(');
                    out.push_str(&placeholders.join(", "));
                    out.push(')');
                }
                (Shape::Interval, Dialect::Postgres) => {
                    out.push_str(&format!("make_interval(secs => {})", placeholders[0]));
                }
                (Shape::Interval, Dialect::MySql) => out.push_str("interval ? microsecond"),
            }
            rest = &rest[digits + 1..];
        }
    }
    out.push_str(rest);
    if let Some(unused) = numbered.iter().position(Option::is_none) {
        return Err(mistake(text, format!("argument {} is unused", unused + 1)));
    }
    Ok((out, order))
}

fn token(rest: &str, dialect: Dialect) -> Result<(&'static str, &'static str)> {
    TOKENS
        .iter()
        .find(|(token, _, _)| rest.starts_with(token))
        .map(|&(token, postgres, mysql)| match dialect {
            Dialect::Postgres => (token, postgres),
            Dialect::MySql => (token, mysql),
        })
        .ok_or_else(|| {
            let end = rest.find('}').map_or(rest.len(), |i| i + 1);
            mistake(rest, format!("unknown token {}", &rest[..end]))
        })
}

fn mistake(text: &str, what: String) -> StoreError {
    StoreError::Statement(format!("{what} in: {}", text.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: Shape = Shape::One;

    /// Asserts that `sql`, with arguments shaped `shapes`, renders for
    /// `dialect` as `text` and binds the arguments' elements in `order`.
    fn renders(
        sql: &str,
        shapes: &[Shape],
        dialect: Dialect,
        text: &str,
        order: &[(usize, usize)],
    ) {
        let (rendered, bound) = render(sql, shapes, dialect).unwrap();
        assert_eq!((rendered.as_str(), bound.as_slice()), (text, order));
    }

    #[test]
    fn postgres_keeps_numbered_parameters_and_binds_each_once() {
        let sql = "select 1 from t where a = $1 and (b = $2 or $2 is null)";
        renders(sql, &[ONE, ONE], Dialect::Postgres, sql, &[(0, 0), (1, 0)]);
    }

    #[test]
    fn postgres_numbers_parameters_in_order_of_first_use() {
        let order = [(1, 0), (0, 0)];
        renders(
            "select $2, $1, $2",
            &[ONE, ONE],
            Dialect::Postgres,
            "select $1, $2, $1",
            &order,
        );
    }

    #[test]
    fn mysql_binds_a_parameter_once_per_use_in_order() {
        renders(
            "select 1 from t where b = $2 and (a = $1 or $1 is null) limit $3",
            &[ONE, ONE, ONE],
            Dialect::MySql,
            "select 1 from t where b = ? and (a = ? or ? is null) limit ?",
            &[(1, 0), (0, 0), (0, 0), (2, 0)],
        );
    }

    #[test]
    fn a_list_is_one_parameter_per_element_and_null_when_empty() {
        let sql = "select 1 from t where s in $1 and id = $2 and k in $3";
        let lengths = [Shape::List(3), ONE, Shape::List(0)];
        let order = [(0, 0), (0, 1), (0, 2), (1, 0)];
        let postgres = "select 1 from t where s in ($1, $2, $3) and id = $4 and k in (null)";
        renders(sql, &lengths, Dialect::Postgres, postgres, &order);
        let mysql = "select 1 from t where s in (?, ?, ?) and id = ? and k in (null)";
        renders(sql, &lengths, Dialect::MySql, mysql, &order);
    }

    #[test]
    fn an_interval_is_seconds_in_postgres_and_microseconds_in_mysql() {
        let sql = "delete from t where at < {now} - $1";
        assert_eq!(
            render(sql, &[Shape::Interval], Dialect::Postgres)
                .unwrap()
                .0,
            "delete from t where at < now() - make_interval(secs => $1)"
        );
        assert_eq!(
            render(sql, &[Shape::Interval], Dialect::MySql).unwrap().0,
            "delete from t where at < now(6) - interval ? microsecond"
        );
    }

    #[test]
    fn quoted_identifiers_take_backticks_in_mysql() {
        let sql = "insert into e (\"at\", body) values ($1, '\"x\"')";
        assert_eq!(render(sql, &[ONE], Dialect::Postgres).unwrap().0, sql);
        assert_eq!(
            render(sql, &[ONE], Dialect::MySql).unwrap().0,
            "insert into e (`at`, body) values (?, '\"x\"')"
        );
    }

    #[test]
    fn parameters_and_tokens_inside_string_literals_are_text() {
        let sql = "select '$1 {now} it''s', $1 where x = 'a$2'";
        let (text, order) = render(sql, &[ONE], Dialect::MySql).unwrap();
        assert_eq!(text, "select '$1 {now} it''s', ? where x = 'a$2'");
        assert_eq!(order, [(0, 0)]);
    }

    #[test]
    fn now_keeps_microseconds_on_both() {
        let sql = "update t set at = {now} where id = $1";
        assert_eq!(
            render(sql, &[ONE], Dialect::Postgres).unwrap().0,
            "update t set at = now() where id = $1"
        );
        assert_eq!(
            render(sql, &[ONE], Dialect::MySql).unwrap().0,
            "update t set at = now(6) where id = ?"
        );
    }

    #[test]
    fn a_missing_or_unused_argument_is_a_mistake_not_a_query() {
        let error = render("select $2", &[ONE], Dialect::MySql).unwrap_err();
        assert!(error.to_string().contains("$2 has no argument"), "{error}");
        let error = render("select $1", &[ONE, ONE], Dialect::Postgres).unwrap_err();
        assert!(
            error.to_string().contains("argument 2 is unused"),
            "{error}"
        );
        let error = render("select {today}", &[], Dialect::Postgres).unwrap_err();
        assert!(
            error.to_string().contains("unknown token {today}"),
            "{error}"
        );
    }

    #[test]
    fn a_dollar_without_a_number_is_text() {
        let (text, _) = render("select 'x' || $1 || '$'", &[ONE], Dialect::MySql).unwrap();
        assert_eq!(text, "select 'x' || ? || '$'");
        let (text, _) = render("select $x, $1", &[ONE], Dialect::MySql).unwrap();
        assert_eq!(text, "select $x, ?");
    }
}
