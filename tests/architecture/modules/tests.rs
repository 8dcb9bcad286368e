use super::*;

fn tree(files: &[(&str, &str)]) -> Tree {
    let files: BTreeMap<PathBuf, String> = files
        .iter()
        .map(|(p, s)| (PathBuf::from(p), (*s).to_owned()))
        .collect();
    Tree::load(Path::new("src/lib.rs"), false, &|p| files.get(p).cloned())
}

#[test]
fn the_cycle_finder_names_each_circle_once() {
    let edges = [
        ("a", "b"),
        ("b", "c"),
        ("c", "a"),
        ("b", "g"),
        ("g", "b"),
        ("c", "d"),
        ("d", "e"),
        ("e", "d"),
        ("f", "a"),
    ];
    let names = |ns: &[&str]| -> Vec<String> { ns.iter().map(|&n| n.to_owned()).collect() };
    let found = cycles(&edges);
    assert_eq!(
        found,
        vec![
            Circle {
                members: names(&["a", "b", "c", "g"]).into_iter().collect(),
                cycle: names(&["a", "b", "c", "a"]),
            },
            Circle {
                members: names(&["d", "e"]).into_iter().collect(),
                cycle: names(&["d", "e", "d"]),
            },
        ]
    );
    assert!(cycles(&[("a", "b"), ("b", "c"), ("a", "c")]).is_empty());
}

#[test]
fn sibling_circles_are_found_through_submodules_and_re_exports() {
    let t = tree(&[
        (
            "src/lib.rs",
            "mod a; pub mod b; mod c;\npub use c::Thing;\n",
        ),
        (
            "src/a.rs",
            "// use crate::c;\nuse crate::b::{self, inner::X};\n",
        ),
        (
            "src/b/mod.rs",
            "pub mod inner;\nconst S: &str = \"crate::a\";\n",
        ),
        (
            "src/b/inner.rs",
            "pub struct X;\nfn f() -> crate::Thing { todo!() }\n",
        ),
        (
            "src/c.rs",
            "pub struct Thing;\nfn g() { super::a::run(); }\n",
        ),
    ]);
    let found = t.cycles();
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].starts_with("under crate: a → b → c → a"),
        "{}",
        found[0]
    );
    assert!(
        found[0].contains("src/b/inner.rs:2 crate::Thing (c)"),
        "{}",
        found[0]
    );
}

#[test]
fn parents_children_tests_comments_and_strings_are_no_arrows() {
    let t = tree(&[
        ("src/lib.rs", "pub mod a; mod b;\npub use a::*;\n"),
        ("src/a/mod.rs", "mod x;\nuse self::x::Y;\npub fn run() {}\n#[cfg(test)]\nmod tests { use crate::b::Z; }\n"),
        ("src/a/x.rs", "pub struct Y;\nuse super::run;\nuse super::super::b; // crate::b\n"),
        ("src/b.rs", "pub struct Z;\n/* crate::a::run */\nfn f() { let _ = r#\"crate::a\"#; crate::run(); }\n"),
    ]);
    let found = t.cycles();
    assert_eq!(found.len(), 1, "{found:#?}");
    // b → a through the glob re-export of `crate::run`, a → b from x.rs.
    assert!(
        found[0].contains("src/b.rs:3 crate::run (a)"),
        "{}",
        found[0]
    );
    assert!(
        found[0].contains("src/a/x.rs:3 super::super::b (b)"),
        "{}",
        found[0]
    );
    assert!(!found[0].contains("Z"), "{}", found[0]);

    let acyclic = tree(&[
        ("src/lib.rs", "pub mod a; mod b;\n"),
        ("src/a/mod.rs", "mod x;\nuse self::x::Y;\npub fn run() {}\n#[cfg(test)]\nmod tests { use crate::b::Z; }\n"),
        ("src/a/x.rs", "pub struct Y;\nuse super::run;\n"),
        ("src/b.rs", "pub struct Z;\nfn f() { crate::a::run(); }\n"),
    ]);
    assert!(acyclic.cycles().is_empty(), "{:#?}", acyclic.cycles());
}
