//! Import circles between the modules of one crate: each crate's module
//! tree is read from its sources (following `mod` declarations from the
//! crate root, `#[path]` included), every `crate::…` and `super::…` path
//! (in `use` declarations and in code) is resolved to the module that owns
//! what it names (through `use` re-exports, named and glob), and each
//! arrow is lifted to the siblings under the two modules' closest common
//! ancestor: `notify::webhook → alerts` is the arrow `notify → alerts`
//! under the crate root. A cycle among siblings is a circle; a module
//! using its parent or its own submodules is not an arrow.
//!
//! Code under `#[cfg(test)]` counts with `include_tests`, and comments and
//! literals never do. A hand-written lexer, not `syn`, so the check needs
//! no new dependency: it reads what it needs (module declarations, `use`
//! trees, paths, the names of items) and skips the rest.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[path = "modules/lex.rs"]
mod lex;

use lex::{lex, Tok};

#[path = "modules/cycles.rs"]
mod cycles;

pub(crate) use cycles::{cycles, Circle};

/// Where a path starts.
#[derive(Clone, Debug)]
enum Base {
    Crate,
    /// `super::` this many times.
    Super(usize),
    SelfMod,
    /// A bare first segment: a child module, an imported name, or another crate.
    Bare,
}

#[derive(Clone, Debug)]
struct RawPath {
    base: Base,
    segs: Vec<String>,
}

#[derive(Debug)]
struct Reference {
    path: RawPath,
    file: PathBuf,
    line: usize,
    text: String,
}

#[derive(Debug, Default)]
struct Module {
    /// Segments from the crate root.
    path: Vec<String>,
    parent: Option<usize>,
    children: BTreeMap<String, usize>,
    /// Names brought in by `use` at the module's top level.
    imports: BTreeMap<String, RawPath>,
    globs: Vec<RawPath>,
    /// Names of the items the module defines.
    items: BTreeSet<String>,
    refs: Vec<Reference>,
}

/// One crate's module tree.
#[derive(Debug, Default)]
pub(crate) struct Tree {
    modules: Vec<Module>,
}

impl Tree {
    /// Reads the crate whose root file is `root` (`lib.rs`, `main.rs`),
    /// with `read` giving a file's text (`None`: no such file).
    pub(crate) fn load(
        root: &Path,
        include_tests: bool,
        read: &dyn Fn(&Path) -> Option<String>,
    ) -> Tree {
        let mut tree = Tree {
            modules: vec![Module::default()],
        };
        let src = read(root).unwrap_or_else(|| panic!("read {}", root.display()));
        let dir = root.parent().unwrap().to_owned();
        tree.file(0, root, &src, dir, include_tests, read);
        tree
    }

    fn file(
        &mut self,
        module: usize,
        file: &Path,
        src: &str,
        dir: PathBuf,
        include_tests: bool,
        read: &dyn Fn(&Path) -> Option<String>,
    ) {
        let toks = lex(src);
        let mut scan = Scan {
            toks: &toks,
            i: 0,
            file,
            include_tests,
            read,
        };
        scan.items(self, module, &dir, false);
    }

    fn child(&mut self, parent: usize, name: &str) -> usize {
        let mut path = self.modules[parent].path.clone();
        path.push(name.to_owned());
        self.modules.push(Module {
            path,
            parent: Some(parent),
            ..Module::default()
        });
        let id = self.modules.len() - 1;
        self.modules[parent].children.insert(name.to_owned(), id);
        id
    }

    fn name(&self, id: usize) -> String {
        match self.modules[id].path.join("::") {
            root if root.is_empty() => "crate".to_owned(),
            path => path,
        }
    }

    fn ancestors(&self, id: usize) -> Vec<usize> {
        let mut chain = vec![id];
        while let Some(parent) = self.modules[*chain.last().unwrap()].parent {
            chain.push(parent);
        }
        chain.reverse();
        chain
    }

    /// The module `path` names from `from`, and whether the path names
    /// that module itself (rather than an item in it); `None` for another
    /// crate's paths.
    fn resolve(&self, from: usize, path: &RawPath, depth: usize) -> Option<(usize, bool)> {
        let start = match path.base {
            Base::Crate => 0,
            Base::SelfMod => from,
            Base::Super(n) => {
                let chain = self.ancestors(from);
                *chain.get(chain.len().checked_sub(n + 1)?)?
            }
            Base::Bare => {
                let first = path.segs.first()?;
                let m = &self.modules[from];
                if m.children.contains_key(first)
                    || m.imports.contains_key(first)
                    || m.items.contains(first)
                {
                    from
                } else {
                    return None;
                }
            }
        };
        self.walk(start, &path.segs, depth)
    }

    fn walk(&self, start: usize, segs: &[String], depth: usize) -> Option<(usize, bool)> {
        if depth > 16 {
            return Some((start, false));
        }
        let mut cur = start;
        for (k, seg) in segs.iter().enumerate() {
            let m = &self.modules[cur];
            if let Some(&child) = m.children.get(seg) {
                cur = child;
                continue;
            }
            if m.items.contains(seg) {
                return Some((cur, false));
            }
            if let Some(import) = m.imports.get(seg) {
                return match self.resolve(cur, import, depth + 1) {
                    Some((target, true)) => self.walk(target, &segs[k + 1..], depth + 1),
                    Some((owner, false)) => Some((owner, false)),
                    // Another crate's item, re-exported: it belongs here.
                    None => Some((cur, false)),
                };
            }
            for glob in &m.globs {
                if let Some((target, true)) = self.resolve(cur, glob, depth + 1) {
                    let t = &self.modules[target];
                    if t.children.contains_key(seg)
                        || t.items.contains(seg)
                        || t.imports.contains_key(seg)
                    {
                        return self.walk(target, &segs[k..], depth + 1);
                    }
                }
            }
            return Some((cur, false));
        }
        Some((cur, true))
    }

    /// Every arrow between sibling modules: (parent, from child, to
    /// child) → the references that make it.
    pub(crate) fn arrows(&self) -> BTreeMap<(String, String, String), Vec<String>> {
        let mut arrows: BTreeMap<(String, String, String), Vec<String>> = BTreeMap::new();
        for (id, module) in self.modules.iter().enumerate() {
            for r in &module.refs {
                let Some((target, _)) = self.resolve(id, &r.path, 0) else {
                    continue;
                };
                let (a, b) = (self.ancestors(id), self.ancestors(target));
                let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
                if common == a.len() || common == b.len() {
                    continue; // itself, an ancestor or a descendant
                }
                let key = (
                    self.name(a[common - 1]),
                    self.name(a[common]),
                    self.name(b[common]),
                );
                let why = format!(
                    "{}:{} {} ({})",
                    r.file.display(),
                    r.line,
                    r.text,
                    self.name(target)
                );
                arrows.entry(key).or_default().push(why);
            }
        }
        arrows
    }

    /// The module circles: each names a cycle, the modules tangled with
    /// it, and the references behind every arrow among them.
    pub(crate) fn cycles(&self) -> Vec<String> {
        let arrows = self.arrows();
        let mut by_parent: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
        for (parent, from, to) in arrows.keys() {
            by_parent.entry(parent).or_default().push((from, to));
        }
        let mut found = Vec::new();
        for (parent, edges) in by_parent {
            for circle in cycles(&edges) {
                let mut text = format!("under {parent}: {}", circle.cycle.join(" → "));
                if circle.members.len() + 1 > circle.cycle.len() {
                    let all: Vec<&str> = circle.members.iter().map(String::as_str).collect();
                    text.push_str(&format!(" (tangled: {})", all.join(", ")));
                }
                for (key, whys) in arrows.range((parent.to_owned(), String::new(), String::new())..)
                {
                    if key.0 != parent {
                        break;
                    }
                    if circle.members.contains(&key.1) && circle.members.contains(&key.2) {
                        for why in whys {
                            text.push_str(&format!("\n      {} → {}: {why}", key.1, key.2));
                        }
                    }
                }
                found.push(text);
            }
        }
        found
    }
}

struct Scan<'a> {
    toks: &'a [(Tok, usize)],
    i: usize,
    file: &'a Path,
    include_tests: bool,
    read: &'a dyn Fn(&Path) -> Option<String>,
}

impl Scan<'_> {
    fn tok(&self, k: usize) -> Option<&Tok> {
        self.toks.get(self.i + k).map(|(t, _)| t)
    }

    fn ident(&self, k: usize) -> Option<&str> {
        match self.tok(k) {
            Some(Tok::Ident(s)) => Some(s),
            _ => None,
        }
    }

    fn punct(&self, k: usize, ch: char) -> bool {
        self.tok(k) == Some(&Tok::Punct(ch))
    }

    fn line(&self) -> usize {
        self.toks.get(self.i).map_or(0, |t| t.1)
    }

    /// The items of `module` up to the `}` closing it (`inline`) or the
    /// end of the file. `dir` is where its file submodules live.
    fn items(&mut self, tree: &mut Tree, module: usize, dir: &Path, inline: bool) {
        let mut depth = 0usize;
        let (mut test_only, mut path_attr): (bool, Option<String>) = (false, None);
        while let Some(tok) = self.tok(0).cloned() {
            match tok {
                Tok::Punct('#')
                    if self.punct(1, '[') || (self.punct(1, '!') && self.punct(2, '[')) =>
                {
                    let (cfg_test, path) = self.attribute();
                    test_only |= cfg_test;
                    path_attr = path.or(path_attr);
                    continue;
                }
                _ if test_only && !self.include_tests => {
                    self.skip_item();
                    test_only = false;
                    path_attr = None;
                    continue;
                }
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => {
                    if depth == 0 && inline {
                        self.i += 1;
                        return;
                    }
                    depth = depth.saturating_sub(1);
                }
                Tok::Ident(ref word) if word == "mod" && self.ident(1).is_some() => {
                    let name = self.ident(1).unwrap().to_owned();
                    let child = tree.child(module, &name);
                    if self.punct(2, ';') {
                        self.i += 3;
                        self.submodule_file(tree, child, &name, dir, path_attr.take(), inline);
                    } else if self.punct(2, '{') {
                        self.i += 3;
                        self.items(tree, child, &dir.join(&name), true);
                    } else {
                        self.i += 1;
                    }
                    test_only = false;
                    continue;
                }
                Tok::Ident(ref word) if word == "use" && !self.punct(1, '<') => {
                    self.i += 1;
                    self.use_decl(tree, module, depth == 0);
                    test_only = false;
                    path_attr = None;
                    continue;
                }
                Tok::Ident(ref word) if (word == "crate" || word == "super" || word == "self") => {
                    let after_dollar = self.i > 0 && self.toks[self.i - 1].0 == Tok::Punct('$');
                    if self.tok(1) == Some(&Tok::Path) && !after_dollar {
                        self.inline_path(tree, module);
                        continue;
                    }
                }
                Tok::Ident(ref word) if depth == 0 => {
                    if let Some(name) = self.item_name(word) {
                        tree.modules[module].items.insert(name);
                    }
                    if !matches!(
                        word.as_str(),
                        "pub" | "crate" | "in" | "super" | "self" | "unsafe" | "async" | "extern"
                    ) {
                        test_only = false;
                        path_attr = None;
                    }
                }
                _ => {}
            }
            self.i += 1;
        }
    }

    /// The name an item keyword at the cursor defines.
    fn item_name(&self, word: &str) -> Option<String> {
        match word {
            "fn" | "struct" | "enum" | "trait" | "type" | "const" | "static" | "union" => {
                let k = if self.ident(1) == Some("mut") { 2 } else { 1 };
                self.ident(k)
                    .filter(|n| !matches!(*n, "_" | "fn" | "unsafe" | "async" | "extern"))
                    .map(str::to_owned)
            }
            "macro_rules" if self.punct(1, '!') => self.ident(2).map(str::to_owned),
            _ => None,
        }
    }

    /// Reads `#[…]` or `#![…]`: whether it is a `cfg` that holds only under
    /// test, and a `path = "…"`.
    fn attribute(&mut self) -> (bool, Option<String>) {
        let start = self.i;
        while !self.punct(0, '[') {
            self.i += 1;
        }
        let mut depth = 0;
        let mut words = Vec::new();
        let mut path = None;
        loop {
            match self.tok(0) {
                None => break,
                Some(Tok::Punct('[' | '(')) => depth += 1,
                Some(Tok::Punct(']' | ')')) => {
                    depth -= 1;
                    if depth == 0 {
                        self.i += 1;
                        break;
                    }
                }
                Some(Tok::Ident(w)) => words.push(w.clone()),
                Some(Tok::Str(s)) if words.len() == 1 && words[0] == "path" => {
                    path = Some(s.clone())
                }
                _ => {}
            }
            self.i += 1;
        }
        let inner = self.toks[start + 1].0 == Tok::Punct('!');
        let cfg_test = !inner
            && words.first().map(String::as_str) == Some("cfg")
            && words.iter().any(|w| w == "test")
            && !words.iter().any(|w| w == "not");
        (cfg_test, path)
    }

    /// Skips the item at the cursor (after its attributes): up to its `;`
    /// or its body's `}`; a field, variant or expression up to its `,`.
    fn skip_item(&mut self) {
        let mut k = 0;
        while matches!(
            self.ident(k),
            Some("pub" | "crate" | "in" | "super" | "unsafe" | "async" | "extern")
        ) || self.punct(k, '(')
        {
            if self.punct(k, '(') {
                while !self.punct(k, ')') {
                    k += 1;
                }
            }
            k += 1;
        }
        let keyword = self.ident(k).unwrap_or("");
        let to_semicolon = matches!(keyword, "const" | "static" | "type" | "use" | "let");
        let item = to_semicolon
            || matches!(
                keyword,
                "fn" | "struct" | "enum" | "union" | "trait" | "impl" | "mod" | "macro_rules"
            );
        let mut depth = 0i32;
        while let Some(tok) = self.tok(0) {
            match tok {
                Tok::Punct('{' | '(' | '[') => depth += 1,
                Tok::Punct('}' | ')' | ']') => {
                    depth -= 1;
                    if depth < 0 {
                        return; // the end of what encloses it
                    }
                    if depth == 0 && item && !to_semicolon && self.punct(0, '}') {
                        self.i += 1;
                        return;
                    }
                }
                Tok::Punct(';') if depth == 0 => {
                    self.i += 1;
                    return;
                }
                Tok::Punct(',') if depth == 0 && !item => {
                    self.i += 1;
                    return;
                }
                _ => {}
            }
            self.i += 1;
        }
    }

    fn submodule_file(
        &mut self,
        tree: &mut Tree,
        child: usize,
        name: &str,
        dir: &Path,
        path_attr: Option<String>,
        inline: bool,
    ) {
        let candidates = match path_attr {
            // Beside the file, outside inline modules.
            Some(p) if inline => vec![(dir.join(&p), None)],
            Some(p) => vec![(self.file.parent().unwrap().join(&p), None)],
            None => vec![
                (dir.join(format!("{name}.rs")), Some(dir.join(name))),
                (dir.join(name).join("mod.rs"), Some(dir.join(name))),
            ],
        };
        for (file, child_dir) in candidates {
            if let Some(src) = (self.read)(&file) {
                // A `mod.rs`, and a file named by `#[path]`, keep their
                // submodules beside them; `a.rs` keeps them in `a/`.
                let child_dir = match child_dir {
                    Some(d) if !file.ends_with("mod.rs") => d,
                    _ => file.parent().unwrap().to_owned(),
                };
                tree.file(child, &file, &src, child_dir, self.include_tests, self.read);
                return;
            }
        }
        panic!("{}: no file for `mod {name};`", self.file.display());
    }

    /// A path in code starting `crate::`, `super::` or `self::`.
    fn inline_path(&mut self, tree: &mut Tree, module: usize) {
        let line = self.line();
        let mut segs = Vec::new();
        while let Some(word) = self.ident(0) {
            segs.push(word.to_owned());
            if self.tok(1) == Some(&Tok::Path) && self.ident(2).is_some() {
                self.i += 2;
            } else {
                self.i += 1;
                break;
            }
        }
        if let Some(path) = raw_path(&segs) {
            let text = segs.join("::");
            tree.modules[module].refs.push(Reference {
                path,
                file: self.file.to_owned(),
                line,
                text,
            });
        }
    }

    /// `use …;` after the `use`: its leaves are references, and at the
    /// module's top level (`top`) the names it brings in.
    fn use_decl(&mut self, tree: &mut Tree, module: usize, top: bool) {
        let line = self.line();
        if self.tok(0) == Some(&Tok::Path) {
            self.i += 1; // `use ::other_crate::…`
        }
        let mut leaves = Vec::new();
        self.use_tree(Vec::new(), &mut leaves);
        while self.tok(0).is_some() && !self.punct(0, ';') {
            self.i += 1;
        }
        self.i += 1;
        for (segs, alias, glob) in leaves {
            let Some(path) = raw_path(&segs) else {
                continue;
            };
            let m = &mut tree.modules[module];
            if top {
                if glob {
                    m.globs.push(path.clone());
                } else {
                    let name = alias.unwrap_or_else(|| segs.last().unwrap().clone());
                    if name != "_" && !matches!(name.as_str(), "self" | "super" | "crate") {
                        m.imports.insert(name, path.clone());
                    }
                }
            }
            let text = segs.join("::") + if glob { "::*" } else { "" };
            m.refs.push(Reference {
                path,
                file: self.file.to_owned(),
                line,
                text,
            });
        }
    }

    /// One use tree: (segments, `as` name, glob) per leaf.
    fn use_tree(
        &mut self,
        mut prefix: Vec<String>,
        leaves: &mut Vec<(Vec<String>, Option<String>, bool)>,
    ) {
        loop {
            if self.punct(0, '{') {
                self.i += 1;
                while !self.punct(0, '}') && self.tok(0).is_some() {
                    self.use_tree(prefix.clone(), leaves);
                    if self.punct(0, ',') {
                        self.i += 1;
                    }
                }
                self.i += 1;
                return;
            }
            if self.punct(0, '*') {
                self.i += 1;
                leaves.push((prefix, None, true));
                return;
            }
            let Some(word) = self.ident(0) else {
                return;
            };
            // `self` inside braces names the prefix itself.
            if word != "self" || prefix.is_empty() {
                prefix.push(word.to_owned());
            }
            self.i += 1;
            if self.tok(0) == Some(&Tok::Path) {
                self.i += 1;
                continue;
            }
            let alias = if self.ident(0) == Some("as") {
                let alias = self.ident(1).map(str::to_owned);
                self.i += 2;
                alias
            } else {
                None
            };
            leaves.push((prefix, alias, false));
            return;
        }
    }
}

/// Segments (`crate`, `super`, `self` first, or a bare name) → a path.
fn raw_path(segs: &[String]) -> Option<RawPath> {
    let first = segs.first()?;
    let (base, rest) = match first.as_str() {
        "crate" => (Base::Crate, &segs[1..]),
        "self" => (Base::SelfMod, &segs[1..]),
        "super" => {
            let n = segs.iter().take_while(|s| *s == "super").count();
            (Base::Super(n), &segs[n..])
        }
        _ => (Base::Bare, segs),
    };
    Some(RawPath {
        base,
        segs: rest.to_vec(),
    })
}

/// Reads a file from disk.
pub(crate) fn disk(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

#[cfg(test)]
#[path = "modules/tests.rs"]
mod tests;
