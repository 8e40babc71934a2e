//! Regex lines: the named groups of a match become the fields (a group that did not take part
//! is null); a line the regex does not match is an error for that line. The `combined` format is
//! this with a fixed pattern for Apache/nginx combined logs.

use crate::tuple::Value;
use regex::{CaptureLocations, Regex};

pub(crate) struct Pattern {
    regex: Regex,
    /// Capture group index of each named group, in order.
    groups: Vec<usize>,
    locations: CaptureLocations,
}

impl Pattern {
    /// `keep`: the positions (among the named groups) of those emitted; all when `None`.
    pub(crate) fn new(pattern: &str, keep: Option<Vec<usize>>) -> Result<Pattern, String> {
        let regex = Regex::new(pattern).map_err(|e| format!("invalid regex: {e}"))?;
        let named: Vec<usize> = regex
            .capture_names()
            .enumerate()
            .filter_map(|(i, n)| n.map(|_| i))
            .collect();
        let groups = match keep {
            Some(keep) => keep.iter().filter_map(|&k| named.get(k).copied()).collect(),
            None => named,
        };
        let locations = regex.capture_locations();
        Ok(Pattern {
            regex,
            groups,
            locations,
        })
    }

    pub(crate) fn extract(&mut self, line: &str, out: &mut Vec<Value>) -> Result<(), String> {
        if self
            .regex
            .captures_read(&mut self.locations, line)
            .is_none()
        {
            return Err("does not match the pattern".into());
        }
        for &g in &self.groups {
            out.push(match self.locations.get(g) {
                Some((s, e)) => Value::str(&line[s..e]),
                None => Value::Null,
            });
        }
        Ok(())
    }
}
