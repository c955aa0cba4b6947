//! Dependencies point one way (issues #23, #28), in `src/` and `core/src/`:
//! no cycle between the files of `src/`, and no arrow back up between
//! folders: each crate stands on floors (`FLOORS`, docs/layout.md
//! "Dependencies"), a file uses its own floor or those below, and on the
//! families' floor a family folder uses no other one (allowed exceptions
//! listed with their reason). The graph is built from the sources: `use`
//! declarations and paths through `crate::`, `self::`, `super::`, child
//! modules and imported module names, following `pub use` re-exports to the
//! file that defines the item.
//!
//! No server needed: it reads the sources.
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// A module path below the crate root (`["ffi", "context"]`).
type Module = Vec<String>;
type Graph = BTreeMap<String, BTreeSet<String>>;

/// One parsed source file.
struct File {
    name: String,
    tokens: Vec<String>,
    /// Inline `mod name { … }` blocks: (first token, end token, name).
    inline: Vec<(usize, usize, String)>,
    /// `use` declarations: (token of `use`, `pub use`?, paths with aliases).
    uses: Vec<(usize, bool, Vec<Aliased>)>,
    /// Token ranges of the `use` declarations, skipped when finding paths.
    use_spans: Vec<(usize, usize)>,
}

/// A `use` path and its alias (`as name`).
type Aliased = (Vec<String>, Option<String>);

/// What a path names: an item of a file, or a module itself.
#[derive(Clone, Debug, PartialEq)]
enum Target {
    Item(Module),
    Module(Module),
}

/// The source with comments and the contents of string and char literals removed.
fn strip(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < c.len() {
        let at = |k: usize| c.get(k).copied().unwrap_or('\0');
        let prev = if i == 0 { ' ' } else { c[i - 1] };
        if at(i) == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if at(i) == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            loop {
                if at(i) == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if at(i) == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else if i >= c.len() {
                    break;
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if at(i) == 'r' && (!ident(prev) || "bc".contains(prev)) && "#\"".contains(at(i + 1))
        {
            let hashes = (i + 1..c.len()).take_while(|&k| c[k] == '#').count();
            if at(i + 1 + hashes) != '"' {
                out.push(c[i]); // a raw identifier, r#name
                i += 1;
                continue;
            }
            let close: String = std::iter::once('"')
                .chain("#".repeat(hashes).chars())
                .collect();
            let rest: String = c[i + 2 + hashes..].iter().collect();
            let len = rest
                .find(&close)
                .map_or(rest.len(), |p| rest[..p].chars().count());
            i += 2 + hashes + len + close.chars().count();
            out.push_str("\"\"");
        } else if at(i) == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if at(i) == '\'' && (at(i + 1) == '\\' || at(i + 2) == '\'') {
            i += 1;
            while i < c.len() && c[i] != '\'' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// Identifiers (`$crate` included), `::`, and single punctuation characters.
fn tokenize(code: &str) -> Vec<String> {
    let c: Vec<char> = code.chars().collect();
    let ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < c.len() {
        if ident(c[i]) || (c[i] == '$' && c.get(i + 1).is_some_and(|&n| ident(n))) {
            let start = i;
            i += 1;
            while i < c.len() && ident(c[i]) {
                i += 1;
            }
            tokens.push(c[start..i].iter().collect());
        } else if c[i] == ':' && c.get(i + 1) == Some(&':') {
            tokens.push("::".into());
            i += 2;
        } else {
            if !c[i].is_whitespace() {
                tokens.push(c[i].to_string());
            }
            i += 1;
        }
    }
    tokens
}

/// Parses one use tree at `t[i..]`, appending (path, alias) to `out`;
/// returns the index after it.
fn use_tree(
    t: &[String],
    mut i: usize,
    prefix: &[String],
    out: &mut Vec<(Vec<String>, Option<String>)>,
) -> usize {
    let mut path = prefix.to_vec();
    while i < t.len() {
        match t[i].as_str() {
            "::" => i += 1,
            "{" => {
                i += 1;
                while i < t.len() && t[i] != "}" {
                    i = use_tree(t, i, &path, out);
                    if t.get(i).map(String::as_str) == Some(",") {
                        i += 1;
                    }
                }
                return i + 1;
            }
            "*" => {
                path.push("*".into());
                out.push((path, None));
                return i + 1;
            }
            _ => {
                path.push(t[i].clone());
                i += 1;
                if t.get(i).map(String::as_str) == Some("::") {
                    continue;
                }
                let alias = (t.get(i).map(String::as_str) == Some("as")).then(|| {
                    i += 2;
                    t[i - 1].clone()
                });
                out.push((path, alias));
                return i;
            }
        }
    }
    i
}

fn parse(name: String, src: &str) -> File {
    let tokens = tokenize(&strip(src));
    let t = &tokens;
    let (mut inline, mut uses, mut use_spans) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..t.len() {
        if t[i] == "mod" && t.get(i + 2).map(String::as_str) == Some("{") {
            let mut depth = 0;
            let end = (i + 2..t.len())
                .find(|&k| {
                    depth += match t[k].as_str() {
                        "{" => 1,
                        "}" => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .unwrap_or(t.len());
            inline.push((i, end, t[i + 1].clone()));
        }
        if t[i] == "use" {
            let back = &t[i.saturating_sub(4)..i];
            let public = back
                .iter()
                .rev()
                .take_while(|s| !";{}]".contains(s.as_str()));
            let public = public.into_iter().any(|s| s == "pub");
            let mut paths = Vec::new();
            let end = use_tree(t, i + 1, &[], &mut paths);
            uses.push((i, public, paths));
            use_spans.push((i, end));
        }
    }
    File {
        name,
        tokens,
        inline,
        uses,
        use_spans,
    }
}

/// Every `.rs` file under `src` (named `<prefix>/<path>`), keyed by its
/// module path.
fn load(src: &Path, prefix: &str) -> BTreeMap<Module, File> {
    let mut files = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src/") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let rel = path.strip_prefix(src).expect("below src/");
            let mut module: Module = rel
                .with_extension("")
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
                module.pop();
            }
            let text = std::fs::read_to_string(&path).expect("read source");
            let name = format!("{prefix}/{}", rel.display());
            files.insert(module, parse(name, &text));
        }
    }
    files
}

struct Crate {
    files: BTreeMap<Module, File>,
    /// Module paths of inline `mod name { … }` blocks.
    inline: BTreeSet<Module>,
}

impl Crate {
    fn new(files: BTreeMap<Module, File>) -> Crate {
        let inline = files
            .iter()
            .flat_map(|(m, f)| {
                f.inline
                    .iter()
                    .map(move |(_, _, n)| [m.clone(), vec![n.clone()]].concat())
            })
            .collect();
        Crate { files, inline }
    }

    fn is_module(&self, m: &Module) -> bool {
        self.files.contains_key(m) || self.inline.contains(m)
    }

    /// The file a module lives in (the longest prefix that is a file).
    fn file_of(&self, m: &Module) -> Module {
        (0..=m.len())
            .rev()
            .map(|n| m[..n].to_vec())
            .find(|p| self.files.contains_key(p))
            .unwrap_or_default()
    }

    /// The module a token of `file` is in, inline modules included.
    fn scope(&self, file: &Module, token: usize) -> Module {
        let f = &self.files[file];
        let mut scope = file.clone();
        for (start, end, name) in &f.inline {
            if (*start..*end).contains(&token) {
                scope.push(name.clone());
            }
        }
        scope
    }

    /// Resolves `path` used in module `scope`; `aliases` are the module
    /// names its file imported. None: not a path into this crate.
    fn resolve(
        &self,
        scope: &Module,
        path: &[String],
        aliases: &BTreeMap<String, Module>,
    ) -> Option<Target> {
        let first = path.first()?;
        let (mut cur, mut rest) = match first.as_str() {
            "crate" | "$crate" => (Vec::new(), &path[1..]),
            "self" => (scope.clone(), &path[1..]),
            "super" => {
                let ups = path.iter().take_while(|s| *s == "super").count();
                (
                    scope[..scope.len().checked_sub(ups)?].to_vec(),
                    &path[ups..],
                )
            }
            _ if self.is_module(&[scope.clone(), vec![first.clone()]].concat()) => {
                (scope.clone(), path)
            }
            _ => (aliases.get(first)?.clone(), &path[1..]),
        };
        while let Some((seg, tail)) = rest.split_first() {
            rest = tail;
            let child = [cur.clone(), vec![seg.clone()]].concat();
            if seg == "self" {
                continue;
            } else if seg == "*" {
                return Some(Target::Item(self.file_of(&cur)));
            } else if self.is_module(&child) {
                cur = child;
            } else if let Some(target) = self.reexport(&cur, seg) {
                match target {
                    Target::Module(m) => cur = m,
                    item => return Some(item),
                }
            } else {
                return Some(Target::Item(self.file_of(&cur)));
            }
        }
        Some(Target::Module(cur))
    }

    /// Where `pub use … name` in module `m` points.
    fn reexport(&self, m: &Module, name: &str) -> Option<Target> {
        let file = self.file_of(m);
        let f = self.files.get(&file)?;
        f.uses
            .iter()
            .filter(|(_, public, _)| *public)
            .find_map(|(at, _, paths)| {
                let (path, _) = paths.iter().find(|(p, alias)| {
                    alias.as_deref().or(p.last().map(String::as_str)) == Some(name)
                })?;
                self.resolve(&self.scope(&file, *at), path, &BTreeMap::new())
            })
    }

    /// Which file refers to which (self-references dropped).
    fn graph(&self) -> Graph {
        let mut graph = Graph::new();
        for (module, f) in &self.files {
            let mut targets = BTreeSet::new();
            let mut aliases = BTreeMap::new();
            for (at, _, paths) in &f.uses {
                let scope = self.scope(module, *at);
                for (path, alias) in paths {
                    match self.resolve(&scope, path, &BTreeMap::new()) {
                        Some(Target::Item(file)) => {
                            targets.insert(file);
                        }
                        Some(Target::Module(m)) => {
                            let name = alias.clone().or_else(|| m.last().cloned());
                            if let Some(name) = name.filter(|n| n != "self") {
                                aliases.insert(name, m);
                            }
                        }
                        None => {}
                    }
                }
            }
            for name in declared_families(f) {
                targets.insert([module.clone(), vec![name]].concat());
            }
            for path in inline_paths(f) {
                let scope = self.scope(module, path.0);
                if let Some(Target::Item(file) | Target::Module(file)) =
                    self.resolve(&scope, &path.1, &aliases)
                {
                    targets.insert(self.file_of(&file));
                }
            }
            let names = targets
                .iter()
                .filter(|t| *t != module)
                .map(|t| self.files[t].name.clone());
            graph.entry(f.name.clone()).or_default().extend(names);
        }
        graph
    }
}

/// The modules a `families!(a, b, …)` invocation declares (src/lib.rs).
fn declared_families(f: &File) -> Vec<String> {
    let t = &f.tokens;
    let Some(at) =
        (0..t.len()).find(|&i| t[i] == "families" && t.get(i + 1).is_some_and(|s| s == "!"))
    else {
        return Vec::new();
    };
    t[at + 3..]
        .iter()
        .take_while(|s| !")]}".contains(s.as_str()))
        .filter(|s| *s != ",")
        .cloned()
        .collect()
}

/// `a::b::c` paths outside `use` declarations: (first token, segments).
fn inline_paths(f: &File) -> Vec<(usize, Vec<String>)> {
    let t = &f.tokens;
    let ident = |s: &str| s.starts_with(|c: char| c.is_alphabetic() || c == '_' || c == '$');
    let mut paths = Vec::new();
    let mut i = 0;
    while i < t.len() {
        let in_use = f.use_spans.iter().any(|(s, e)| (*s..*e).contains(&i));
        let after_path = i > 0 && (t[i - 1] == "::" || t[i - 1] == ".");
        if in_use || after_path || !ident(&t[i]) || t.get(i + 1).map(String::as_str) != Some("::") {
            i += 1;
            continue;
        }
        let start = i;
        let mut segs = vec![t[i].clone()];
        while t.get(i + 1).map(String::as_str) == Some("::")
            && t.get(i + 2).is_some_and(|s| ident(s))
        {
            segs.push(t[i + 2].clone());
            i += 2;
        }
        paths.push((start, segs));
        i += 1;
    }
    paths
}

/// Groups of two or more files that reach each other (Tarjan's algorithm).
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, (usize, usize)>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, (n, n));
        s.stack.push(v);
        for w in s.graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.index[w].1.min(s.index[v].1);
                s.index.get_mut(v).expect("visited").1 = low;
            } else if s.stack.contains(&w) {
                let low = s.index[w].0.min(s.index[v].1);
                s.index.get_mut(v).expect("visited").1 = low;
            }
        }
        if s.index[v].0 == s.index[v].1 {
            let at = s.stack.iter().rposition(|x| *x == v).expect("on stack");
            let group: Vec<String> = s.stack.drain(at..).map(String::from).collect();
            if group.len() > 1 {
                s.found.push(group);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.found
}

fn graph_of(dir: &str) -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    Crate::new(load(&src, dir)).graph()
}

fn src_graph() -> Graph {
    graph_of("src")
}

/// The floors of a crate, bottom first: a file may use files on its own
/// floor or below, never above. On the families' floor each folder stands
/// alone: a family uses no other family, unless `across` lets it.
struct Floors {
    dir: &'static str,
    /// Path prefixes (below `dir`) of each floor, bottom first; the first
    /// matching prefix wins, and a file no prefix matches is on the top.
    floors: &'static [&'static [&'static str]],
    /// The floor whose folders must not use each other.
    families: usize,
    /// Allowed arrows between family folders, or up a floor: (from, to)
    /// prefixes, each with the reason.
    allowed: &'static [(&'static str, &'static str, &'static str)],
}

/// The family folders, the same names in `src/` and `core/src/`.
const FAMILY_FOLDERS: &[&str] = &[
    "bloom/",
    "cuckoo/",
    "cms/",
    "topk/",
    "tdigest/",
    "apbf/",
    "valkey_bloom/",
];

const FLOORS: &[Floors] = &[
    Floors {
        dir: "src",
        floors: &[
            // The C API: uses nothing above it.
            &["ffi/"],
            // What every family fills in or reads.
            &[
                "family.rs",
                "command_docs.rs",
                "config.rs",
                "config/",
                "clock.rs",
            ],
            FAMILY_FOLDERS,
            // registry.rs, module.rs, info.rs, lib.rs: consume the families.
        ],
        families: 2,
        allowed: &[(
            "bloom/",
            "valkey_bloom/",
            "BF.* hands valkey-bloom's keys to its handlers (one command name, two types)",
        )],
    },
    Floors {
        dir: "core/src",
        floors: &[
            &[
                "alloc.rs",
                "hash.rs",
                "rdb.rs",
                "prefetch.rs",
                "module_type.rs",
                "dump/",
                "rdb_file/",
                "limit.rs",
                "bitunion.rs",
                "clock.rs",
                "reshape.rs",
            ],
            // Number parsing and argument helpers, shared by the parsers
            // and the configs.
            &["args/"],
            // What every family fills in: configs, the ring of time buckets.
            &["config.rs", "config/", "window.rs"],
            FAMILY_FOLDERS,
            // lib.rs: the crate's table of types.
        ],
        families: 3,
        allowed: &[],
    },
];

impl Floors {
    fn rel<'a>(&self, file: &'a str) -> &'a str {
        file.strip_prefix(self.dir)
            .and_then(|r| r.strip_prefix('/'))
            .unwrap_or(file)
    }

    /// (floor, the prefix that placed it there).
    fn place(&self, file: &str) -> (usize, &'static str) {
        let rel = self.rel(file);
        self.floors
            .iter()
            .enumerate()
            .find_map(|(n, prefixes)| {
                prefixes
                    .iter()
                    .find(|p| rel.starts_with(*p))
                    .map(|p| (n, *p))
            })
            .unwrap_or((self.floors.len(), ""))
    }

    /// Every arrow that points up a floor, or across family folders.
    fn violations(&self, graph: &Graph) -> Vec<String> {
        let mut found = Vec::new();
        for (a, targets) in graph {
            for b in targets {
                let ((fa, pa), (fb, pb)) = (self.place(a), self.place(b));
                let (ra, rb) = (self.rel(a), self.rel(b));
                let allowed = self
                    .allowed
                    .iter()
                    .any(|(from, to, _)| ra.starts_with(from) && rb.starts_with(to));
                let why = if fb > fa {
                    "up a floor"
                } else if fa == self.families && fb == fa && pa != pb {
                    "across families"
                } else {
                    continue;
                };
                if !allowed {
                    found.push(format!("  {a} -> {b} ({why})"));
                }
            }
        }
        found
    }
}

#[test]
fn no_arrow_back_up() {
    let report: Vec<String> = FLOORS
        .iter()
        .flat_map(|floors| floors.violations(&graph_of(floors.dir)))
        .collect();
    assert!(
        report.is_empty(),
        "arrows back up (docs/layout.md \"Dependencies\"):\n{}",
        report.join("\n")
    );
}

#[test]
fn no_import_cycle_between_src_files() {
    let graph = src_graph();
    let found = cycles(&graph);
    let report: Vec<String> = found
        .iter()
        .map(|group| {
            let edges = group.iter().flat_map(|a| {
                graph[a]
                    .iter()
                    .filter(|b| group.contains(b))
                    .map(move |b| format!("  {a} -> {b}"))
            });
            format!(
                "cycle among {} files:\n{}",
                group.len(),
                edges.collect::<Vec<_>>().join("\n")
            )
        })
        .collect();
    assert!(found.is_empty(), "{}", report.join("\n"));
}

/// The parser sees what the sources say: a use, a re-export followed to its
/// file, a `super::` path, a child module path, an imported module name.
#[test]
fn graph_has_the_known_edges() {
    let graph = src_graph();
    let has = |a: &str, b: &str| graph.get(a).is_some_and(|t| t.contains(b));
    for (a, b) in [
        ("src/bloom/mod.rs", "src/family.rs"),
        ("src/bloom/commands.rs", "src/ffi/context.rs"),
        ("src/ffi/command.rs", "src/ffi/context.rs"),
        ("src/bloom/mod.rs", "src/bloom/docs.rs"),
        ("src/lib.rs", "src/bloom/mod.rs"),
        ("src/module.rs", "src/ffi/slot_migration.rs"),
    ] {
        assert!(has(a, b), "{a} -> {b} missing; {a} -> {:?}", graph.get(a));
    }
    assert!(
        !has("src/bloom/commands.rs", "src/ffi/mod.rs"),
        "re-export not followed"
    );
}

#[test]
fn cycles_are_found() {
    let parse = |edges: &[(&str, &str)]| {
        let mut g = Graph::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
            g.entry(b.to_string()).or_default();
        }
        g
    };
    assert!(cycles(&parse(&[("a", "b"), ("b", "c"), ("a", "c")])).is_empty());
    let found = cycles(&parse(&[("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]));
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0].iter().collect::<BTreeSet<_>>(),
        ["a", "b", "c"]
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .iter()
            .collect()
    );
    // Strings and comments are not code.
    let f = parse_file("// use crate::x;\nlet s = \"crate::y::z\"; let c = '\"'; crate::w::v();");
    assert_eq!(inline_paths(&f).len(), 1);
    assert!(f.uses.is_empty());
}

fn parse_file(src: &str) -> File {
    parse("test.rs".into(), src)
}

/// The floors rule finds an arrow up and one across, and lets an allowed one be.
#[test]
fn arrows_back_up_are_found() {
    let src = &FLOORS[0];
    let mut g = Graph::new();
    for (a, b) in [
        ("src/ffi/context.rs", "src/config.rs"),
        ("src/cms/commands.rs", "src/topk/mod.rs"),
        ("src/bloom/commands.rs", "src/valkey_bloom/mod.rs"),
        ("src/cms/commands.rs", "src/ffi/context.rs"),
        ("src/module.rs", "src/cms/mod.rs"),
    ] {
        g.entry(a.to_string()).or_default().insert(b.to_string());
    }
    let found = src.violations(&g);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("up a floor") || found[1].contains("up a floor"));
}

/// The license the manifests declare is the one the LICENSE file holds
/// (issue 39): packagers read either.
#[test]
fn every_crate_declares_the_license_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("LICENSE")).expect("LICENSE at the root");
    assert!(
        text.starts_with("MIT License\n") && text.contains("Copyright (c) "),
        "LICENSE is not the MIT text with a copyright line"
    );
    for manifest in [
        "Cargo.toml",
        "core/Cargo.toml",
        "testkit/Cargo.toml",
        "tools/copy/Cargo.toml",
        "fuzz/Cargo.toml",
    ] {
        let m = std::fs::read_to_string(root.join(manifest)).expect(manifest);
        let licenses: Vec<&str> = m.lines().filter(|l| l.starts_with("license")).collect();
        assert_eq!(licenses, ["license = \"MIT\""], "{manifest}");
    }
}
