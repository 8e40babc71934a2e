//! `/metrics`: the counters of every task and a few gauges per component and topology, in
//! Prometheus's text exposition format (version 0.0.4).

use super::api::CapacityWindow;
use super::{ComponentView, TaskView, TopologyView};
use std::fmt::Write;
use std::time::Instant;

/// The content type of the exposition format.
pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A per-task counter: metric name, help, and how to read it.
type TaskCounter = (&'static str, &'static str, fn(&TaskView) -> u64);

const TASK_COUNTERS: &[TaskCounter] = &[
    ("storm_task_emitted_total", "Tuples emitted.", |t| t.emitted),
    (
        "storm_task_transferred_total",
        "Tuples sent to other tasks.",
        |t| t.transferred,
    ),
    ("storm_task_executed_total", "Tuples executed.", |t| {
        t.executed
    }),
    ("storm_task_acked_total", "Tuples acked.", |t| t.acked),
    ("storm_task_failed_total", "Tuples failed.", |t| t.failed),
    ("storm_task_errors_total", "Errors reported.", |t| t.errors),
    (
        "storm_task_dropped_total",
        "Inputs dropped as unreadable.",
        |t| t.dropped,
    ),
];

/// Escape a label value: backslash, double quote and newline.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A family's `# HELP` and `# TYPE` lines.
fn header(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// The labels of a component's series.
fn component_labels(t: &TopologyView, c: &ComponentView) -> String {
    format!(
        "topology=\"{}\",component=\"{}\"",
        escape(&t.name),
        escape(&c.id)
    )
}

/// The whole exposition for these topologies.
pub(crate) fn render(tops: &[TopologyView], window: &mut CapacityWindow, now: Instant) -> String {
    let mut out = String::new();
    header(
        &mut out,
        "storm_topology_uptime_seconds",
        "Seconds since the topology started.",
        "gauge",
    );
    for t in tops {
        let _ = writeln!(
            out,
            "storm_topology_uptime_seconds{{topology=\"{}\",id=\"{}\",status=\"{}\"}} {}",
            escape(&t.name),
            escape(&t.id),
            t.status,
            t.uptime.as_secs_f64()
        );
    }
    header(&mut out, "storm_topology_workers", "Workers.", "gauge");
    for t in tops {
        let _ = writeln!(
            out,
            "storm_topology_workers{{topology=\"{}\"}} {}",
            escape(&t.name),
            t.workers
        );
    }
    for (name, help, read) in TASK_COUNTERS {
        header(&mut out, name, help, "counter");
        for t in tops {
            for c in &t.components {
                for task in &c.tasks {
                    let _ = writeln!(
                        out,
                        "{name}{{{},task=\"{}\"}} {}",
                        component_labels(t, c),
                        task.task,
                        read(task)
                    );
                }
            }
        }
    }
    header(
        &mut out,
        "storm_task_execute_seconds_total",
        "Time spent executing.",
        "counter",
    );
    for t in tops {
        for c in &t.components {
            for task in &c.tasks {
                let _ = writeln!(
                    out,
                    "storm_task_execute_seconds_total{{{},task=\"{}\"}} {}",
                    component_labels(t, c),
                    task.task,
                    task.execute_ns as f64 / 1e9
                );
            }
        }
    }
    component_gauges(&mut out, tops, window, now);
    user_metrics(&mut out, tops);
    spout_lag(&mut out, tops);
    out
}

/// A gauge of a partition: metric name, help, and how to read it.
type LagGauge = (
    &'static str,
    &'static str,
    fn(&crate::components::PartitionLag) -> i64,
);

const LAG_GAUGES: &[LagGauge] = &[
    (
        "storm_kafka_lag",
        "Records of a partition not yet committed by the spout (log head minus committed offset).",
        |p| p.lag,
    ),
    (
        "storm_kafka_committed_offset",
        "The offset committed for the spout in a partition (-1: none yet).",
        |p| p.committed,
    ),
    (
        "storm_kafka_log_head_offset",
        "The end of a partition (its high watermark).",
        |p| p.head,
    ),
];

/// The lag of the spouts that report one (`kafka`), per topic and partition.
fn spout_lag(out: &mut String, tops: &[TopologyView]) {
    if !tops
        .iter()
        .any(|t| t.components.iter().any(|c| !c.lag.is_empty()))
    {
        return;
    }
    for (name, help, read) in LAG_GAUGES {
        header(out, name, help, "gauge");
        for t in tops {
            for c in &t.components {
                for p in &c.lag {
                    let _ = writeln!(
                        out,
                        "{name}{{{},topic=\"{}\",partition=\"{}\"}} {}",
                        component_labels(t, c),
                        escape(&p.topic),
                        p.partition,
                        read(p)
                    );
                }
            }
        }
    }
}

/// Capacity, execute latency and parallelism of each component.
fn component_gauges(out: &mut String, tops: &[TopologyView], w: &mut CapacityWindow, now: Instant) {
    header(
        out,
        "storm_component_capacity",
        "Share of recent time the executors spent executing (Storm UI's capacity).",
        "gauge",
    );
    for t in tops {
        for c in t.components.iter().filter(|c| !c.spout) {
            let cap = w.capacity(t, c, now);
            let _ = writeln!(
                out,
                "storm_component_capacity{{{}}} {cap}",
                component_labels(t, c)
            );
        }
    }
    header(
        out,
        "storm_component_execute_latency_ms",
        "Mean execute latency in milliseconds.",
        "gauge",
    );
    for t in tops {
        for c in &t.components {
            let _ = writeln!(
                out,
                "storm_component_execute_latency_ms{{{}}} {}",
                component_labels(t, c),
                c.execute_latency_ms()
            );
        }
    }
    header(out, "storm_component_executors", "Executors.", "gauge");
    for t in tops {
        for c in &t.components {
            let _ = writeln!(
                out,
                "storm_component_executors{{{}}} {}",
                component_labels(t, c),
                c.executors
            );
        }
    }
}

/// User metrics (a multilang child's `metrics` command): the last numeric value and the
/// number of updates.
fn user_metrics(out: &mut String, tops: &[TopologyView]) {
    header(
        out,
        "storm_user_metric",
        "Last numeric value of a component's user metric.",
        "gauge",
    );
    for t in tops {
        for c in &t.components {
            for (name, m) in &c.metrics {
                if let Some(v) = m.last.as_f64() {
                    let _ = writeln!(
                        out,
                        "storm_user_metric{{{},name=\"{}\"}} {v}",
                        component_labels(t, c),
                        escape(name)
                    );
                }
            }
        }
    }
    header(
        out,
        "storm_user_metric_updates_total",
        "Updates of a component's user metric.",
        "counter",
    );
    for t in tops {
        for c in &t.components {
            for (name, m) in &c.metrics {
                let _ = writeln!(
                    out,
                    "storm_user_metric_updates_total{{{},name=\"{}\"}} {}",
                    component_labels(t, c),
                    escape(name),
                    m.updates
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
