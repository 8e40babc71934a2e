//! Validation of streams: endpoints, groupings, declared streams and fields, and whether every
//! bolt is fed and reachable from a spout (Storm's `TopologyBuilder` wiring, checked up front).

use super::*;

impl Validator<'_> {
    pub(super) fn streams(
        &mut self,
        raw: &[RawStream],
        components: &mut [(Component, &RawComponent)],
    ) -> Vec<Stream> {
        let mut streams = Vec::new();
        let mut checks = Vec::new();
        for rs in raw {
            let from = self.endpoint(&rs.from, "from", rs.span);
            let to = self.endpoint(&rs.to, "to", rs.span);
            if let (Some(to_id), Some(to)) = (&to, &rs.to) {
                if self.declared.get(to_id) == Some(&ComponentKind::Spout) {
                    self.error(
                        format!("spout `{to_id}` cannot be a stream's `to`"),
                        to.span,
                    )
                    .help = Some("spouts have no inputs; only bolts receive streams".into());
                }
            }
            let grouping = self.grouping(rs);
            let stream = rs
                .stream
                .as_ref()
                .map_or(DEFAULT_STREAM.to_string(), |s| s.value.clone());
            if let (Some(from), Some(to), Some(grouping)) = (from, to, grouping) {
                checks.push((streams.len(), rs));
                streams.push(Stream {
                    from,
                    to,
                    stream,
                    grouping,
                    name: rs.name.as_ref().map(|n| n.value.clone()),
                });
            }
        }
        let unresolved = outputs::resolve(components, &streams);
        let index: HashMap<&str, usize> = components
            .iter()
            .enumerate()
            .map(|(i, (c, _))| (c.id.as_str(), i))
            .collect();
        for (i, rs) in checks {
            let s = &streams[i];
            if let (false, Some(&from)) = (unresolved.contains(&s.from), index.get(s.from.as_str()))
            {
                self.stream_fields(s, rs, &components[from].0);
            }
        }
        streams
    }

    fn endpoint(
        &mut self,
        v: &Option<Spanned<String>>,
        key: &str,
        stream_span: Span,
    ) -> Option<String> {
        let Some(v) = v else {
            self.error(format!("stream without `{key}`"), stream_span);
            return None;
        };
        if self.declared.contains_key(&v.value) {
            return Some(v.value.clone());
        }
        let mut ids: Vec<&str> = self.declared.keys().map(String::as_str).collect();
        ids.sort_unstable();
        let help = suggest(&v.value, ids.into_iter()).map(|s| format!("did you mean `{s}`?"));
        let d = self.error(
            format!("unknown component `{}` in stream `{key}`", v.value),
            v.span,
        );
        d.help = help;
        None
    }

    fn grouping(&mut self, rs: &RawStream) -> Option<Grouping> {
        let Some(g) = &rs.grouping else {
            return Some(Grouping::Shuffle);
        };
        let norm = g.value.to_ascii_lowercase().replace('_', "");
        let args = || {
            rs.grouping_args
                .as_ref()
                .map(|a| a.value.iter().map(|f| f.value.clone()).collect::<Vec<_>>())
                .unwrap_or_default()
        };
        let grouping = match norm.as_str() {
            "shuffle" => Grouping::Shuffle,
            "all" => Grouping::All,
            "global" => Grouping::Global,
            "none" => Grouping::None,
            "direct" => Grouping::Direct,
            "localorshuffle" => Grouping::LocalOrShuffle,
            "fields" | "partialkey" => {
                if args().is_empty() {
                    let at = rs.grouping_args.as_ref().map_or(g.span, |a| a.span);
                    self.error(
                        format!("`{}` grouping needs field names in `args`", g.value),
                        at,
                    );
                    return None;
                }
                if norm == "fields" {
                    Grouping::Fields(args())
                } else {
                    Grouping::PartialKey(args())
                }
            }
            _ => {
                let d = self.error(format!("unknown grouping `{}`", g.value), g.span);
                d.help = Some(match suggest(&g.value, Grouping::NAMES.iter().copied()) {
                    Some(s) => format!("did you mean `{s}`?"),
                    None => format!("known groupings: {}", Grouping::NAMES.join(", ")),
                });
                return None;
            }
        };
        Some(grouping)
    }

    /// The stream must exist on its source, and a fields grouping's fields must be declared.
    fn stream_fields(&mut self, s: &Stream, rs: &RawStream, from: &Component) {
        let Some(fields) = from.outputs.get(&s.stream) else {
            let at = rs
                .stream
                .as_ref()
                .or(rs.from.as_ref())
                .map_or(rs.span, |x| x.span);
            let d = self.error(
                format!(
                    "`{}` ({}) has no output stream `{}`",
                    from.id,
                    from.ctype.name(),
                    s.stream
                ),
                at,
            );
            d.help = Some(if from.outputs.is_empty() {
                format!("`{}` is a sink: it declares no output", from.ctype.name())
            } else {
                let names: Vec<&str> = from.outputs.keys().map(String::as_str).collect();
                format!("its streams: {}", names.join(", "))
            });
            return;
        };
        let Some(args) = &rs.grouping_args else {
            return;
        };
        if s.grouping.key_fields().is_none() {
            return;
        }
        for f in &args.value {
            if !fields.contains(&f.value) {
                let d = self.error(
                    format!(
                        "`{}` does not declare field `{}` on stream `{}`",
                        from.id, f.value, s.stream
                    ),
                    f.span,
                );
                d.help = Some(match suggest(&f.value, fields.iter().map(String::as_str)) {
                    Some(x) => format!("did you mean `{x}`? its fields: {}", fields.join(", ")),
                    None => format!("its fields: {}", fields.join(", ")),
                });
            }
        }
    }

    /// Bolts with no input are errors (Flux silently drops them); bolts no spout reaches warn.
    /// `targets`: every `to` written, so a stream already reported as broken does not also
    /// make its target look unconnected.
    pub(super) fn connectivity(
        &mut self,
        components: &[(Component, &RawComponent)],
        streams: &[Stream],
        targets: &HashSet<&str>,
    ) {
        let declared = self.declared.clone();
        let mut reached: HashSet<&str> = declared
            .iter()
            .filter(|(_, k)| **k == ComponentKind::Spout)
            .map(|(id, _)| id.as_str())
            .collect();
        let mut next: HashMap<&str, Vec<&str>> = HashMap::new();
        for s in streams {
            next.entry(s.from.as_str()).or_default().push(s.to.as_str());
        }
        let mut work: Vec<&str> = reached.iter().copied().collect();
        while let Some(id) = work.pop() {
            for to in next.get(id).into_iter().flatten() {
                if reached.insert(to) {
                    work.push(to);
                }
            }
        }
        let fed: HashSet<&str> = streams.iter().map(|s| s.to.as_str()).collect();
        for (c, rc) in components {
            let at = rc.id.as_ref().map_or(rc.span, |i| i.span);
            if c.is_spout() || reached.contains(c.id.as_str()) {
                continue;
            }
            if !targets.contains(c.id.as_str()) {
                self.error(format!("bolt `{}` has no input stream", c.id), at)
                    .help = Some(format!("add a stream with `to: {}`", c.id));
            } else if fed.contains(c.id.as_str()) {
                self.diags.push(Diagnostic::warning(
                    format!("bolt `{}` cannot be reached from any spout", c.id),
                    at,
                ));
            }
        }
    }

    /// A topology in which nothing writes anywhere runs, prints nothing and exits 0: warn.
    /// Sinks are `stdout`, `log`, `discard` (chosen silence) and shell bolts (which may write
    /// wherever they like).
    pub(super) fn sinks(&mut self, components: &[(Component, &RawComponent)], streams: &[Stream]) {
        let writes = |c: &Component| c.ctype.writes(c.kind);
        // After an error (an unknown type may well have been the sink) this would be noise.
        let broken = self.diags.iter().any(|d| d.is_error());
        if broken || components.iter().any(|(c, _)| writes(c)) {
            return;
        }
        let leaves: Vec<&str> = components
            .iter()
            .filter(|(c, _)| !c.is_spout() && !streams.iter().any(|s| s.from == c.id))
            .map(|(c, _)| c.id.as_str())
            .collect();
        let at = leaves
            .last()
            .and_then(|id| components.iter().find(|(c, _)| c.id == *id))
            .map(|(_, rc)| rc.id.as_ref().map_or(rc.span, |i| i.span));
        let message = "no component writes output: the topology will run and print nothing";
        let mut d = match at {
            Some(span) => Diagnostic::warning(message, span),
            None => Diagnostic::unlocated(crate::syntax::diag::Severity::Warning, message),
        };
        d.help = Some(match leaves.last() {
            Some(id) => format!(
                "send `{id}`'s output to a sink: end the DSL pipeline with `| stdout`, or add a stream from `{id}` to a `stdout` bolt"
            ),
            None => "add a `stdout` bolt (or `log`, or `discard` to drop on purpose)".into(),
        });
        self.diags.push(d);
    }
}
