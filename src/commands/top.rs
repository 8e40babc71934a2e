//! `storm top`: a terminal view of a running topology (as `vector top`), drawn with ratatui
//! from the UI's REST API: each component's counts, rates, capacity and latency, refreshed
//! every `--interval`; `s` changes the sort column, `q` (or Esc, Ctrl-C) quits.

use super::Status;
use crate::cli::TopArgs;
use crate::ui::client;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table};
use serde_json::Value;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// One component's row.
#[derive(Debug, Clone, Default)]
struct RowData {
    id: String,
    kind: &'static str,
    tasks: u64,
    emitted: u64,
    executed: u64,
    acked: u64,
    failed: u64,
    /// Emitted (spouts) or executed (bolts) a second since the previous read.
    rate: f64,
    capacity: f64,
    latency_ms: f64,
    /// Kafka spouts: records not yet committed, over their partitions (`/lag`).
    lag: Option<i64>,
    last_error: String,
}

/// The columns one can sort by, in the order `s` steps through them.
const SORTS: &[&str] = &[
    "id", "rate", "capacity", "latency", "emitted", "failed", "lag",
];

/// The rows of a topology page (`/api/v1/topology/:id`), rates from `previous`.
fn rows_of(t: &Value, previous: &HashMap<String, (Instant, u64)>, now: Instant) -> Vec<RowData> {
    let num = |v: &Value| v.as_u64().unwrap_or(0);
    let float = |v: &Value| v.as_str().and_then(|s| s.parse().ok()).unwrap_or(0.0);
    let mut rows = Vec::new();
    let empty = Vec::new();
    for (list, kind, id_key) in [("spouts", "spout", "spoutId"), ("bolts", "bolt", "boltId")] {
        for c in t[list].as_array().unwrap_or(&empty) {
            let id = c[id_key].as_str().unwrap_or("?").to_string();
            let count = if kind == "spout" {
                num(&c["emitted"])
            } else {
                num(&c["executed"])
            };
            let rate = previous
                .get(&id)
                .filter(|(at, n)| now > *at && count >= *n)
                .map_or(0.0, |(at, n)| {
                    (count - n) as f64 / now.duration_since(*at).as_secs_f64()
                });
            rows.push(RowData {
                id,
                kind,
                tasks: num(&c["tasks"]),
                emitted: num(&c["emitted"]),
                executed: num(&c["executed"]),
                acked: num(&c["acked"]),
                failed: num(&c["failed"]),
                rate,
                capacity: float(&c["capacity"]),
                latency_ms: float(&c["executeLatency"]),
                lag: None,
                last_error: c["lastError"].as_str().unwrap_or("").to_string(),
            });
        }
    }
    rows
}

/// Set each spout's lag from a `/api/v1/topology/:id/lag` document (Storm's
/// `TopologySpoutLag`): the sum over its topics' partitions.
fn add_lag(rows: &mut [RowData], lag: &Value) {
    for r in rows.iter_mut().filter(|r| r.kind == "spout") {
        let Some(topics) = lag[&r.id]["spoutLagResult"].as_object() else {
            continue;
        };
        let sum = topics
            .values()
            .filter_map(Value::as_object)
            .flat_map(|parts| parts.values())
            .filter_map(|p| p["lag"].as_i64())
            .sum();
        r.lag = Some(sum);
    }
}

/// Sort rows by column `SORTS[by]` (numbers largest first).
fn sort_rows(rows: &mut [RowData], by: usize) {
    let key = |r: &RowData| match SORTS[by] {
        "rate" => r.rate,
        "capacity" => r.capacity,
        "latency" => r.latency_ms,
        "emitted" => r.emitted as f64,
        "failed" => r.failed as f64,
        "lag" => r.lag.unwrap_or(-1) as f64,
        _ => 0.0,
    };
    if SORTS[by] == "id" {
        rows.sort_by(|a, b| a.id.cmp(&b.id));
    } else {
        rows.sort_by(|a, b| key(b).total_cmp(&key(a)).then(a.id.cmp(&b.id)));
    }
}

/// The UI address to read: `--ui`, or nimbus's UI: `ui.port` (as `conf/storm.yaml` sets it,
/// default 8080) on nimbus's host.
fn ui_address(a: &TopArgs) -> anyhow::Result<String> {
    if let Some(ui) = &a.target.ui {
        return Ok(ui.clone());
    }
    let Some(nimbus) = a.target.nimbus.as_deref() else {
        anyhow::bail!("storm top needs --ui ADDR or --nimbus ADDR");
    };
    let host = nimbus.rsplit_once(':').map_or(nimbus, |(h, _)| h);
    let port = crate::config::layers::cluster_config(&a.target.config.overrides)
        .ok()
        .and_then(|c| c.get_u64("ui.port"))
        .unwrap_or(u64::from(crate::ui::DEFAULT_PORT));
    Ok(format!("{host}:{port}"))
}

/// The id of the topology to show: `--topology` (name or id), else the first.
fn pick_topology(ui: &str, wanted: Option<&str>) -> anyhow::Result<String> {
    let list = client::get_json(ui, "/api/v1/topology/summary")?;
    let empty = Vec::new();
    let tops = list["topologies"].as_array().unwrap_or(&empty);
    let found = tops.iter().find(|t| match wanted {
        Some(w) => t["id"] == w || t["name"] == w,
        None => true,
    });
    match found {
        Some(t) => Ok(t["id"].as_str().unwrap_or_default().to_string()),
        None => {
            let names: Vec<&str> = tops.iter().filter_map(|t| t["name"].as_str()).collect();
            anyhow::bail!(
                "no topology {} at {ui} (running: {})",
                wanted.map_or(String::new(), |w| format!("`{w}`")),
                if names.is_empty() {
                    "none".into()
                } else {
                    names.join(", ")
                }
            )
        }
    }
}

pub(crate) fn run(a: TopArgs) -> anyhow::Result<Status> {
    anyhow::ensure!(
        a.interval.is_finite() && a.interval >= 0.1,
        "--interval must be at least 0.1 seconds (got {})",
        a.interval
    );
    let ui = ui_address(&a)?;
    let id = pick_topology(&ui, a.topology.as_deref())?;
    use std::io::IsTerminal;
    anyhow::ensure!(
        std::io::stdout().is_terminal() && std::io::stdin().is_terminal(),
        "storm top draws in a terminal: run it in one (for figures in a script, read \
         http://{ui}/api/v1/topology/{id} or /metrics)"
    );
    let mut terminal = ratatui::try_init()
        .map_err(|e| anyhow::anyhow!("storm top cannot take over the terminal: {e}"))?;
    let result = draw_loop(&mut terminal, &ui, &id, Duration::from_secs_f64(a.interval));
    ratatui::restore();
    result.map(|()| Status::Success)
}

/// Read, draw, wait for a key or the next refresh; until `q`.
fn draw_loop(
    terminal: &mut ratatui::DefaultTerminal,
    ui: &str,
    id: &str,
    every: Duration,
) -> anyhow::Result<()> {
    let mut sort = 0;
    let mut previous: HashMap<String, (Instant, u64)> = HashMap::new();
    let mut rows = Vec::new();
    let mut head = String::new();
    let mut next_read = Instant::now();
    loop {
        if Instant::now() >= next_read {
            let now = Instant::now();
            match client::get_json(ui, &format!("/api/v1/topology/{}", super::ui::encode(id))) {
                Ok(t) => {
                    rows = rows_of(&t, &previous, now);
                    let lag = format!("/api/v1/topology/{}/lag", super::ui::encode(id));
                    if let Ok(lag) = client::get_json(ui, &lag) {
                        add_lag(&mut rows, &lag);
                    }
                    for r in &rows {
                        let count = if r.kind == "spout" {
                            r.emitted
                        } else {
                            r.executed
                        };
                        previous.insert(r.id.clone(), (now, count));
                    }
                    head = format!(
                        "{} ({})  {}  uptime {}  workers {}  executors {}",
                        t["name"].as_str().unwrap_or("?"),
                        t["id"].as_str().unwrap_or("?"),
                        t["status"].as_str().unwrap_or("?"),
                        t["uptime"].as_str().unwrap_or("?"),
                        t["workersTotal"],
                        t["executorsTotal"],
                    );
                }
                Err(e) => head = format!("{id}: {e:#}"),
            }
            next_read = now + every;
        }
        sort_rows(&mut rows, sort);
        terminal.draw(|f| draw(f, &head, &rows, sort))?;
        let wait = next_read.saturating_duration_since(Instant::now());
        if event::poll(wait)? {
            if let Event::Key(k) = event::read()? {
                match k.code {
                    KeyCode::Char('q') | KeyCode::Esc => return Ok(()),
                    KeyCode::Char('c') if k.modifiers.contains(KeyModifiers::CONTROL) => {
                        return Ok(())
                    }
                    KeyCode::Char('s') | KeyCode::Right => sort = (sort + 1) % SORTS.len(),
                    KeyCode::Left => sort = (sort + SORTS.len() - 1) % SORTS.len(),
                    _ => {}
                }
            }
        }
    }
}

fn draw(f: &mut ratatui::Frame, head: &str, rows: &[RowData], sort: usize) {
    let [top, body, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(f.area());
    f.render_widget(Paragraph::new(head.to_string()), top);
    let header = Row::new([
        "component",
        "kind",
        "tasks",
        "emitted",
        "executed",
        "rate/s",
        "capacity",
        "lat ms",
        "acked",
        "failed",
        "lag",
        "last error",
    ])
    .style(Style::default().add_modifier(Modifier::BOLD));
    let table_rows = rows.iter().map(|r| {
        // Past 0.8 a bolt is close to its limit: Storm's UI marks it, so does this.
        let cap_style = if r.capacity > 0.8 {
            Style::default().fg(Color::Red).add_modifier(Modifier::BOLD)
        } else {
            Style::default()
        };
        Row::new([
            Cell::from(r.id.clone()),
            Cell::from(r.kind),
            Cell::from(r.tasks.to_string()),
            Cell::from(r.emitted.to_string()),
            Cell::from(r.executed.to_string()),
            Cell::from(format!("{:.1}", r.rate)),
            Cell::from(format!("{:.3}", r.capacity)).style(cap_style),
            Cell::from(format!("{:.3}", r.latency_ms)),
            Cell::from(r.acked.to_string()),
            Cell::from(r.failed.to_string()),
            Cell::from(r.lag.map_or(String::new(), |l| l.to_string())),
            Cell::from(r.last_error.clone()),
        ])
    });
    let widths = [
        Constraint::Length(16),
        Constraint::Length(5),
        Constraint::Length(5),
        Constraint::Length(11),
        Constraint::Length(11),
        Constraint::Length(10),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(11),
        Constraint::Length(8),
        Constraint::Length(10),
        Constraint::Min(10),
    ];
    let table = Table::new(table_rows, widths)
        .header(header)
        .block(Block::default().borders(Borders::ALL).title("components"));
    f.render_widget(table, body);
    f.render_widget(
        Paragraph::new(Line::from(format!(
            "sorted by {} · s/←/→ sort · q quit",
            SORTS[sort]
        ))),
        foot,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The screen `storm top` draws for a kafka spout with lag and a bolt, as text.
    #[test]
    fn a_kafka_spout_shows_its_lag() {
        let t = serde_json::json!({
            "spouts": [{"spoutId": "in", "tasks": 2, "emitted": 700, "acked": 600}],
            "bolts": [{"boltId": "count", "tasks": 1, "executed": 700, "acked": 600,
                       "capacity": "0.912", "executeLatency": "1.250"}],
        });
        let lag = serde_json::json!({"in": {"spoutId": "in", "spoutType": "KAFKA",
            "spoutLagResult": {"words": {
                "0": {"consumerCommittedOffset": 300, "logHeadOffset": 500, "lag": 200},
                "1": {"consumerCommittedOffset": 300, "logHeadOffset": 320, "lag": 20}}}}});
        let mut rows = rows_of(&t, &HashMap::new(), Instant::now());
        add_lag(&mut rows, &lag);
        assert_eq!(rows[0].lag, Some(220));
        assert_eq!(rows[1].lag, None, "a bolt has no lag");
        let backend = ratatui::backend::TestBackend::new(120, 7);
        let mut terminal = ratatui::Terminal::new(backend).expect("a test terminal");
        terminal
            .draw(|f| draw(f, "lagging (lagging-1-1)  ACTIVE", &rows, 6))
            .expect("draws");
        let buffer = terminal.backend().buffer();
        let screen: Vec<String> = (0..buffer.area.height)
            .map(|y| {
                let line: String = (0..buffer.area.width)
                    .map(|x| buffer[(x, y)].symbol().to_string())
                    .collect();
                line.trim_end().to_string()
            })
            .collect();
        insta::assert_snapshot!(screen.join("\n"));
    }

    #[test]
    fn rows_sort_by_the_chosen_column() {
        let mut rows = vec![
            RowData {
                id: "b".into(),
                capacity: 0.1,
                ..Default::default()
            },
            RowData {
                id: "a".into(),
                capacity: 0.9,
                ..Default::default()
            },
            RowData {
                id: "c".into(),
                capacity: 0.5,
                ..Default::default()
            },
        ];
        sort_rows(&mut rows, 0);
        assert_eq!(
            rows.iter().map(|r| r.id.as_str()).collect::<String>(),
            "abc"
        );
        sort_rows(&mut rows, 2);
        assert_eq!(
            rows.iter().map(|r| r.id.as_str()).collect::<String>(),
            "acb"
        );
    }
}
