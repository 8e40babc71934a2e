//! The source tree's shape, checked: which module may import which (no cycle between top-level
//! modules, nor between the role folders of `cluster/`), and how long a function may grow.
//! docs/architecture.md describes the layers; these tests keep the code to it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path below the crate root, e.g. `["runtime", "executor"]`.
type ModPath = Vec<String>;

/// Every source file of the library with the module path it defines.
fn library_files() -> Vec<(ModPath, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    collect_rs(&root, &mut files);
    files
        .into_iter()
        .filter(|path| !path.ends_with("main.rs"))
        .map(|path| (module_path(&root, &path), path))
        .collect()
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).expect("src/ is readable");
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            collect_rs(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// `src/runtime/executor.rs` → `runtime::executor`; `src/net/mod.rs` → `net`; `src/lib.rs` → root.
fn module_path(root: &Path, file: &Path) -> ModPath {
    let relative = file.strip_prefix(root).expect("a file under src/");
    let mut parts: ModPath = relative
        .iter()
        .map(|part| part.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The file's code without comments, split before its trailing inline test module (whose
/// `super::` means the file's own module).
fn code_of(text: &str) -> (String, String) {
    match text.find("#[cfg(test)]\nmod ") {
        Some(at) => (strip_comments(&text[..at]), strip_comments(&text[at..])),
        None => (strip_comments(text), String::new()),
    }
}

fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let skip = if let Some(after) = rest.strip_prefix("//") {
            after.find('\n').map_or(rest.len(), |end| end + 2)
        } else if let Some(after) = rest.strip_prefix("/*") {
            after.find("*/").map_or(rest.len(), |end| end + 4)
        } else if rest.starts_with("'\"'") {
            3
        } else if rest.starts_with('"') || rest.starts_with("r\"") || rest.starts_with("r#\"") {
            literal_end(rest)
        } else {
            let ch = rest.chars().next().expect("rest is not empty");
            out.push(ch);
            rest = &rest[ch.len_utf8()..];
            continue;
        };
        // Comments and literals keep their line breaks, so line numbers stay true.
        out.extend(rest[..skip].chars().filter(|ch| *ch == '\n'));
        out.push(' ');
        rest = &rest[skip..];
    }
    out
}

/// The byte just past the string literal (plain or raw) that starts `text`.
fn literal_end(text: &str) -> usize {
    if let Some(raw) = text.strip_prefix("r#\"") {
        return raw.find("\"#").map_or(text.len(), |end| end + 5);
    }
    if let Some(raw) = text.strip_prefix("r\"") {
        return raw.find('"').map_or(text.len(), |end| end + 3);
    }
    let bytes = text.as_bytes();
    let mut at = 1;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    bytes.len()
}

/// Every module path the code names through `crate::`, `super::` or `self::`, with `use` trees
/// expanded.
fn named_paths(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let bytes = code.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let is_start = at == 0 || !is_ident(bytes[at - 1]) && bytes[at - 1] != b':';
        let word = ["crate::", "super::", "self::"]
            .into_iter()
            .find(|word| bytes[at..].starts_with(word.as_bytes()));
        match word {
            Some(word) if is_start => {
                let (tree, used) = use_tree(&code[at..]);
                let head = word.trim_end_matches("::").to_string();
                for mut path in tree {
                    path.insert(0, head.clone());
                    paths.push(path);
                }
                at += used.max(word.len());
            }
            _ => at += 1,
        }
    }
    paths
}

fn is_ident(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// Parses `a::b::{c, d::e}` at the start of `text` (after the leading keyword) into its leaf
/// paths; returns them and how many bytes were read.
fn use_tree(text: &str) -> (Vec<Vec<String>>, usize) {
    let keyword_end = text.find("::").map_or(text.len(), |at| at + 2);
    let (paths, used) = tree_at(&text[keyword_end..]);
    (paths, keyword_end + used)
}

fn tree_at(text: &str) -> (Vec<Vec<String>>, usize) {
    let bytes = text.as_bytes();
    let mut prefix = Vec::new();
    let mut at = 0;
    loop {
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        if at < bytes.len() && bytes[at] == b'{' {
            let (branches, used) = branches_at(&text[at + 1..]);
            let paths = branches
                .into_iter()
                .map(|branch| prefix.iter().cloned().chain(branch).collect())
                .collect();
            return (paths, at + 1 + used);
        }
        let start = at;
        while at < bytes.len() && is_ident(bytes[at]) {
            at += 1;
        }
        if start == at {
            return (vec![prefix], at);
        }
        prefix.push(text[start..at].to_string());
        if !text[at..].starts_with("::") {
            return (vec![prefix], at);
        }
        at += 2;
    }
}

/// Reads `c, d::e }` (the inside of a brace group) into its branches.
fn branches_at(text: &str) -> (Vec<Vec<String>>, usize) {
    let mut paths = Vec::new();
    let mut at = 0;
    let bytes = text.as_bytes();
    loop {
        let (branch, used) = tree_at(&text[at..]);
        paths.extend(branch.into_iter().filter(|path| !path.is_empty()));
        at += used;
        while at < bytes.len() && bytes[at] != b',' && bytes[at] != b'}' {
            at += 1;
        }
        if at >= bytes.len() || bytes[at] == b'}' {
            return (paths, (at + 1).min(bytes.len()));
        }
        at += 1;
    }
}

/// The module a named path lands in: `crate::runtime::executor::Spout` → `runtime::executor`.
fn resolve(from: &ModPath, path: &[String], modules: &BTreeSet<ModPath>) -> ModPath {
    let mut target: ModPath = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        Some("super") => from[..from.len().saturating_sub(1)].to_vec(),
        _ => from.clone(),
    };
    let mut rest = &path[1..];
    while let Some(word) = rest.first() {
        match word.as_str() {
            "super" => {
                target.pop();
            }
            "self" => {}
            _ => break,
        }
        rest = &rest[1..];
    }
    for word in rest {
        let mut longer = target.clone();
        longer.push(word.clone());
        if !modules.contains(&longer) {
            break;
        }
        target = longer;
    }
    target
}

/// Module → the modules it imports, ancestors and descendants left out.
fn import_graph() -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let files = library_files();
    let modules: BTreeSet<ModPath> = files.iter().map(|(module, _)| module.clone()).collect();
    let mut graph = BTreeMap::new();
    for (module, file) in &files {
        let text = std::fs::read_to_string(file).expect("a readable source file");
        let mut targets = BTreeSet::new();
        let (code, tests) = code_of(&text);
        let inside_tests: ModPath = module
            .iter()
            .cloned()
            .chain(["tests".to_string()])
            .collect();
        let named = named_paths(&code).into_iter().map(|path| (module, path));
        let named_in_tests = named_paths(&tests)
            .into_iter()
            .map(|path| (&inside_tests, path));
        for (from, path) in named.chain(named_in_tests) {
            let target = resolve(from, &path, &modules);
            if !target.starts_with(module) && !module.starts_with(&target) {
                targets.insert(target);
            }
        }
        graph.insert(module.clone(), targets);
    }
    graph
}

fn show(module: &ModPath) -> String {
    if module.is_empty() {
        "crate".to_string()
    } else {
        module.join("::")
    }
}

/// Pairs of modules where each imports the other, apart from a module and its own submodules.
fn mutual_imports(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<String> {
    let imports =
        |from: &ModPath, to: &ModPath| graph.get(from).is_some_and(|targets| targets.contains(to));
    let mut pairs = Vec::new();
    for (from, targets) in graph {
        for to in targets.iter().filter(|to| from < *to) {
            if imports(to, from) {
                pairs.push(format!("{} <-> {}", show(from), show(to)));
            }
        }
    }
    pairs
}

#[test]
fn no_two_modules_import_each_other() {
    let cycles = mutual_imports(&import_graph());
    assert!(
        cycles.is_empty(),
        "modules that import each other:\n{}",
        cycles.join("\n")
    );
}

/// Top-level module → the top-level modules it imports (itself left out).
fn folder_graph(
    graph: &BTreeMap<ModPath, BTreeSet<ModPath>>,
) -> BTreeMap<String, BTreeSet<String>> {
    let top = |module: &ModPath| {
        module
            .first()
            .cloned()
            .unwrap_or_else(|| "crate".to_string())
    };
    let mut folders: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, targets) in graph {
        let entry = folders.entry(top(from)).or_default();
        for to in targets {
            if top(to) != top(from) && !to.is_empty() {
                entry.insert(top(to));
            }
        }
    }
    folders
}

/// Each top-level module that can reach itself through others' imports, with one such loop.
fn folder_cycles(folders: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut cycles = Vec::new();
    for start in folders.keys() {
        // Breadth-first from `start`, remembering how each folder was reached.
        let mut came_from: BTreeMap<&String, &String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut found = None;
        while let Some(at) = queue.pop_front() {
            for next in folders.get(at).into_iter().flatten() {
                if next == start {
                    found = Some(at);
                    break;
                }
                if !came_from.contains_key(next) {
                    came_from.insert(next, at);
                    queue.push_back(next);
                }
            }
            if found.is_some() {
                break;
            }
        }
        if let Some(mut at) = found {
            let mut ring = vec![start.clone()];
            while at != start {
                ring.push(at.clone());
                at = came_from[at];
            }
            ring.push(start.clone());
            ring.reverse();
            cycles.push(ring.join(" -> "));
        }
    }
    cycles
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    let cycles = folder_cycles(&folder_graph(&import_graph()));
    assert!(
        cycles.is_empty(),
        "top-level modules in an import cycle:\n{}",
        cycles.join("\n")
    );
}

/// The modules inside `cluster/` grouped by role folder (`coordination`, `protocol`, `nimbus`,
/// `supervisor`, `worker`; a file at the root, such as `worker_logs`, is a group of its own) →
/// the groups they import.
fn cluster_role_graph(
    graph: &BTreeMap<ModPath, BTreeSet<ModPath>>,
) -> BTreeMap<String, BTreeSet<String>> {
    let role = |module: &ModPath| match module.as_slice() {
        [top, role, ..] if top == "cluster" => Some(role.clone()),
        _ => None,
    };
    let mut roles: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, targets) in graph {
        let Some(from_role) = role(from) else {
            continue;
        };
        let entry = roles.entry(from_role.clone()).or_default();
        entry.extend(
            targets
                .iter()
                .filter_map(role)
                .filter(|to| *to != from_role),
        );
    }
    roles
}

#[test]
fn the_cluster_is_in_role_folders_without_an_import_cycle() {
    let roles = cluster_role_graph(&import_graph());
    for folder in ["coordination", "protocol", "nimbus", "supervisor", "worker"] {
        assert!(
            roles.contains_key(folder),
            "no cluster/{folder}/: {roles:?}"
        );
    }
    let cycles = folder_cycles(&roles);
    assert!(
        cycles.is_empty(),
        "cluster's role folders in an import cycle:\n{}",
        cycles.join("\n")
    );
}

/// The coordination store is the bottom of the cluster: it knows nothing of the daemons or of
/// what they say to each other.
#[test]
fn the_coordination_store_imports_no_other_cluster_role() {
    let roles = cluster_role_graph(&import_graph());
    let imported = roles.get("coordination").cloned().unwrap_or_default();
    assert!(
        imported.is_empty(),
        "cluster/coordination/ imports {imported:?}"
    );
}

#[test]
fn the_transport_moves_bytes_and_names_no_tuple() {
    let graph = import_graph();
    let offending: Vec<String> = graph
        .iter()
        .filter(|(from, _)| from.first().map(String::as_str) == Some("net"))
        .flat_map(|(from, targets)| targets.iter().map(move |to| (from, to)))
        .filter(|(_, to)| {
            matches!(
                to.first().map(String::as_str),
                Some("runtime" | "components")
            )
        })
        .map(|(from, to)| format!("{} -> {}", show(from), show(to)))
        .collect();
    assert!(
        offending.is_empty(),
        "net imports the runtime or components:\n{}",
        offending.join("\n")
    );
}

/// `(name, first line, line count)` of every function in `code` that has a body.
fn function_lengths(code: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = code.lines().collect();
    let mut found = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let Some(name) = fn_name(line) else { continue };
        if let Some(end) = body_end(&lines, index) {
            found.push((name, index + 1, end - index + 1));
        }
    }
    found
}

fn fn_name(line: &str) -> Option<String> {
    let at = line.find("fn ")?;
    if at > 0 && is_ident(line.as_bytes()[at - 1]) {
        return None;
    }
    let name: String = line[at + 3..]
        .chars()
        .take_while(|ch| ch.is_alphanumeric() || *ch == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The line index of the brace that closes the body of the function declared at `start`, or
/// `None` for a declaration without a body.
fn body_end(lines: &[&str], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut opened = false;
    for (index, line) in lines.iter().enumerate().skip(start) {
        for byte in without_char_literals(line).bytes() {
            match byte {
                b'{' => {
                    depth += 1;
                    opened = true;
                }
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if opened && depth == 0 {
                        return Some(index);
                    }
                }
                b';' if !opened => return None,
                _ => {}
            }
        }
    }
    None
}

fn without_char_literals(line: &str) -> String {
    line.replace("'{'", "' '")
        .replace("'}'", "' '")
        .replace("b'{'", "")
        .replace("b'}'", "")
}

#[test]
fn no_function_is_over_80_lines() {
    let mut long = Vec::new();
    let mut files = Vec::new();
    collect_rs(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a readable source file");
        for (name, line, count) in function_lengths(&strip_comments(&text)) {
            if count > 80 {
                long.push(format!("{}:{line} {name}: {count} lines", file.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over 80 lines:\n{}",
        long.join("\n")
    );
}

/// The code of the item that starts with `head` in `file` (under `src/`), comments left out:
/// from `head` to the brace that closes it.
fn item_body(file: &str, head: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(file);
    let code = strip_comments(&std::fs::read_to_string(&path).expect("a readable source file"));
    let at = code
        .find(head)
        .unwrap_or_else(|| panic!("{file} has no `{head}`"));
    let lines: Vec<&str> = code[at..].lines().collect();
    let end = body_end(&lines, 0).unwrap_or_else(|| panic!("`{head}` in {file} has no body"));
    lines[..=end].join("\n")
}

/// Checkpointing wraps a bolt (Storm's `StatefulBoltExecutor`): the `Bolt` trait knows nothing
/// of checkpoints, state, rounds or acker traffic, and a plain bolt's task in the runtime has no
/// checkpoint code on its path.
#[test]
fn the_bolt_trait_knows_nothing_of_checkpoints() {
    let words = ["checkpoint", "state", "round", "acks", "marker"];
    let bodies = [
        ("components/mod.rs", "pub trait Bolt: Send {"),
        ("runtime/bolt_task.rs", "impl BoltTask for Plain {"),
    ];
    for (file, head) in bodies {
        let body = item_body(file, head).to_lowercase();
        let named: Vec<&str> = words.into_iter().filter(|w| body.contains(w)).collect();
        assert!(
            named.is_empty(),
            "`{head}` in src/{file} names {named:?}:\n{body}"
        );
    }
}
