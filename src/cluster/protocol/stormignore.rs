//! `.stormignore`: the files of a topology's folder that `storm submit` leaves out of the
//! resources it ships, written as `.gitignore` patterns are.
//!
//! One pattern a line; blank lines and lines starting with `#` are skipped. `*` matches any
//! run of characters but `/`, `?` one character but `/`, `**` any run including `/`. A
//! pattern without a `/` (other than a trailing one) matches a name at any depth; one with a
//! `/` matches a path from the folder (a leading `/` only anchors). A trailing `/` matches
//! folders only. `!` re-includes what an earlier pattern left out; the last matching line
//! decides.

use std::path::Path;

/// The patterns of one `.stormignore`.
#[derive(Debug, Clone, Default)]
pub(crate) struct StormIgnore {
    rules: Vec<Rule>,
}

#[derive(Debug, Clone)]
struct Rule {
    glob: Vec<char>,
    anchored: bool,
    dir_only: bool,
    negated: bool,
}

/// The file name patterns are read from, in the topology's folder.
pub(crate) const FILE_NAME: &str = ".stormignore";

impl StormIgnore {
    /// The patterns in `dir/.stormignore`; none when there is no such file.
    pub(crate) fn load(dir: &Path) -> anyhow::Result<StormIgnore> {
        let file = dir.join(FILE_NAME);
        match std::fs::read_to_string(&file) {
            Ok(text) => Ok(StormIgnore::parse(&text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(StormIgnore::default()),
            Err(e) => anyhow::bail!("cannot read {}: {e}", file.display()),
        }
    }

    fn parse(text: &str) -> StormIgnore {
        let rules = text.lines().filter_map(rule).collect();
        StormIgnore { rules }
    }

    /// Whether `path` ('/'-separated, relative to the folder) is left out.
    pub(crate) fn ignores(&self, path: &str, is_dir: bool) -> bool {
        let name = path.rsplit('/').next().unwrap_or(path);
        let mut ignored = false;
        for r in &self.rules {
            if r.dir_only && !is_dir {
                continue;
            }
            let target = if r.anchored { path } else { name };
            if matches(&r.glob, &target.chars().collect::<Vec<_>>()) {
                ignored = !r.negated;
            }
        }
        ignored
    }
}

fn rule(line: &str) -> Option<Rule> {
    let line = line.trim_end();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (negated, line) = match line.strip_prefix('!') {
        Some(rest) => (true, rest),
        None => (false, line),
    };
    let (dir_only, line) = match line.strip_suffix('/') {
        Some(rest) => (true, rest),
        None => (false, line),
    };
    let anchored = line.contains('/');
    let line = line.strip_prefix('/').unwrap_or(line);
    if line.is_empty() {
        return None;
    }
    Some(Rule {
        glob: line.chars().collect(),
        anchored,
        dir_only,
        negated,
    })
}

/// Whether `text` matches the whole of `glob` (see the module comment).
fn matches(glob: &[char], text: &[char]) -> bool {
    match glob.split_first() {
        None => text.is_empty(),
        Some(('*', rest)) if rest.first() == Some(&'*') => {
            // `**/` also matches no folder at all.
            let rest = &rest[1..];
            let after_slash = rest.strip_prefix(&['/']).unwrap_or(rest);
            (0..=text.len()).any(|i| matches(rest, &text[i..]))
                || (rest.first() == Some(&'/') && matches(after_slash, text))
        }
        Some(('*', rest)) => {
            let stop = text.iter().position(|c| *c == '/').unwrap_or(text.len());
            (0..=stop).any(|i| matches(rest, &text[i..]))
        }
        Some(('?', rest)) => text.first().is_some_and(|c| *c != '/') && matches(rest, &text[1..]),
        Some((c, rest)) => text.first() == Some(c) && matches(rest, &text[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::StormIgnore;

    #[test]
    fn names_match_at_any_depth_and_paths_from_the_folder() {
        let ig = StormIgnore::parse("# data\n*.csv\n/build\nlogs/\ndocs/*.md\n!keep.csv\n");
        assert!(ig.ignores("a.csv", false));
        assert!(ig.ignores("deep/down/b.csv", false));
        assert!(!ig.ignores("deep/keep.csv", false));
        assert!(ig.ignores("build", true));
        assert!(!ig.ignores("src/build", true));
        assert!(ig.ignores("logs", true));
        assert!(!ig.ignores("logs", false));
        assert!(ig.ignores("docs/a.md", false));
        assert!(!ig.ignores("docs/sub/a.md", false));
        assert!(!ig.ignores("split.py", false));
    }

    #[test]
    fn double_stars_cross_folders() {
        let ig = StormIgnore::parse("data/**/*.bin\n**/tmp\n");
        assert!(ig.ignores("data/x.bin", false));
        assert!(ig.ignores("data/a/b/x.bin", false));
        assert!(!ig.ignores("other/x.bin", false));
        assert!(ig.ignores("tmp", true));
        assert!(ig.ignores("a/b/tmp", true));
    }
}
