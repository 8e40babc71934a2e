//! The `chaos` bolt, for fault tests and demos: passes tuples on, failing a fraction `args.fail`,
//! dropping a fraction `args.drop` without ack (they time out), and delaying each by
//! `args.delay` (humantime or seconds). Deterministic with `args.seed`. For the runtime's own
//! fault tests, `args.panic_after: N` panics on the tuple after the first N.

use super::builtin as b;
use super::{Bolt, BoltCollector, TaskContext};
use crate::model::plan::streams;
use crate::tuple::Tuple;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::time::Duration;

struct Chaos {
    fail: f64,
    drop: f64,
    delay: Option<Duration>,
    seed: u64,
    rng: SmallRng,
    /// Tuples left before a deliberate panic (for tests of executor crashes).
    panic_after: Option<u64>,
}

impl Chaos {
    fn new(args: &serde_json::Map<String, serde_json::Value>) -> Chaos {
        let frac = |k: &str| {
            args.get(k)
                .and_then(|v| v.as_f64())
                .unwrap_or(0.0)
                .clamp(0.0, 1.0)
        };
        let seed = args.get("seed").and_then(|v| v.as_u64()).unwrap_or(0);
        Chaos {
            fail: frac("fail"),
            drop: frac("drop"),
            delay: args.get("delay").and_then(crate::config::duration_of),
            seed,
            rng: SmallRng::seed_from_u64(seed),
            panic_after: args.get("panic_after").and_then(|v| v.as_u64()),
        }
    }
}

impl Bolt for Chaos {
    fn prepare(&mut self, ctx: &TaskContext) -> anyhow::Result<()> {
        self.rng = SmallRng::seed_from_u64(self.seed ^ u64::from(ctx.task_id));
        Ok(())
    }

    fn execute(&mut self, input: &Tuple, out: &mut dyn BoltCollector) -> anyhow::Result<()> {
        if input.is_tick() {
            return Ok(());
        }
        if let Some(left) = self.panic_after.as_mut() {
            assert!(*left > 0, "chaos: panic_after reached");
            *left -= 1;
        }
        if let Some(d) = self.delay {
            std::thread::sleep(d);
        }
        let r: f64 = self.rng.random();
        if r < self.fail {
            out.fail(input);
        } else if r < self.fail + self.drop {
            // Dropped: neither passed on nor acked; the tree times out and is replayed.
        } else {
            out.send(streams::DEFAULT, &[input], input.values.clone());
            out.ack(input);
        }
        Ok(())
    }

    fn auto_ack(&self) -> bool {
        false
    }
}

/// The `chaos` built-in.
pub(crate) struct ChaosType;

impl b::Builtin for ChaosType {
    fn name(&self) -> &'static str {
        "chaos"
    }
    fn summary(&self) -> &'static str {
        "bolt: passes tuples on, failing `fail`, dropping `drop`, delaying `delay`"
    }
    fn roles(&self) -> b::Roles {
        b::Roles::Bolt
    }
    fn args(&self) -> Vec<b::Arg> {
        use b::ArgShape as A;
        vec![
            b::arg("fail", A::Fraction),
            b::arg("drop", A::Fraction),
            b::arg("delay", A::Duration),
            b::arg("seed", A::Number),
            b::arg("panic_after", A::Number),
        ]
    }
    fn output_fields(&self, _c: &crate::model::Component, input: Option<&[String]>) -> b::Fields {
        Some(Some(input?.to_vec()))
    }
    fn field_types(&self, cx: &b::TypeCx) -> Option<Vec<crate::expr::Type>> {
        Some(cx.input?.1.to_vec())
    }
    fn bolt(
        &self,
        c: &crate::model::Component,
        _base: &std::path::Path,
    ) -> anyhow::Result<Box<dyn Bolt>> {
        Ok(Box::new(Chaos::new(&c.args)))
    }
}
