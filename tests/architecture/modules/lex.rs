//! The tokens of Rust source the module reader needs: identifiers, `::`,
//! punctuation and string literals, with their lines; comments dropped.

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Tok {
    Ident(String),
    /// `::`
    Path,
    Punct(char),
    Str(String),
    /// Numbers, chars, byte strings: nothing to read in them.
    Lit,
}

/// Rust source → tokens with their line, comments dropped.
pub(super) fn lex(src: &str) -> Vec<(Tok, usize)> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let ident_start = |ch: char| ch.is_alphabetic() || ch == '_';
    let ident_char = |ch: char| ch.is_alphanumeric() || ch == '_';
    while i < c.len() {
        let ch = c[i];
        let at = |k: usize| c.get(i + k).copied().unwrap_or('\0');
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(c[i] == '\n');
                    i += 1;
                }
            }
        } else if let Some(len) = raw_string_prefix(&c[i..]) {
            // r"…", r#"…"#, br#"…"#, cr"…": no escapes, ends at `"` and as many `#`.
            let hashes = c[i..i + len].iter().filter(|&&h| h == '#').count();
            let start_line = line;
            i += len;
            let begin = i;
            loop {
                if i >= c.len() {
                    break;
                }
                if c[i] == '"' && (1..=hashes).all(|k| c.get(i + k) == Some(&'#')) {
                    break;
                }
                line += usize::from(c[i] == '\n');
                i += 1;
            }
            out.push((
                Tok::Str(c[begin..i.min(c.len())].iter().collect()),
                start_line,
            ));
            i += 1 + hashes;
        } else if ch == '"' || ((ch == 'b' || ch == 'c') && at(1) == '"') {
            let start_line = line;
            i += if ch == '"' { 1 } else { 2 };
            let mut text = String::new();
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    text.push(c[i]);
                    i += 1;
                }
                if i < c.len() {
                    line += usize::from(c[i] == '\n');
                    text.push(c[i]);
                    i += 1;
                }
            }
            i += 1;
            out.push((Tok::Str(text), start_line));
        } else if ch == '\'' || (ch == 'b' && at(1) == '\'') {
            // A char literal ('x', '\n', b'x') or a lifetime or label ('a).
            let j = if ch == 'b' { i + 1 } else { i };
            let next = c.get(j + 1).copied().unwrap_or('\0');
            if next == '\\' || c.get(j + 2) == Some(&'\'') {
                i = j + 1;
                while i < c.len() && c[i] != '\'' {
                    i += if c[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                out.push((Tok::Lit, line));
            } else {
                i = j + 1;
                while i < c.len() && ident_char(c[i]) {
                    i += 1;
                }
            }
        } else if ch == 'r' && at(1) == '#' && ident_start(at(2)) {
            let begin = i + 2;
            i = begin;
            while i < c.len() && ident_char(c[i]) {
                i += 1;
            }
            out.push((Tok::Ident(c[begin..i].iter().collect()), line));
        } else if ident_start(ch) {
            let begin = i;
            while i < c.len() && ident_char(c[i]) {
                i += 1;
            }
            out.push((Tok::Ident(c[begin..i].iter().collect()), line));
        } else if ch.is_ascii_digit() {
            while i < c.len() && ident_char(c[i]) {
                i += 1;
            }
            out.push((Tok::Lit, line));
        } else if ch == ':' && at(1) == ':' {
            out.push((Tok::Path, line));
            i += 2;
        } else {
            out.push((Tok::Punct(ch), line));
            i += 1;
        }
    }
    out
}

/// The length of a raw string's opening (`r#"`, `br"`, …) at the start of `c`.
fn raw_string_prefix(c: &[char]) -> Option<usize> {
    let mut i = 0;
    if matches!(c.first(), Some('b' | 'c')) {
        i += 1;
    }
    if c.get(i) != Some(&'r') {
        return None;
    }
    i += 1;
    while c.get(i) == Some(&'#') {
        i += 1;
    }
    (c.get(i) == Some(&'"')).then_some(i + 1)
}
