//! A simulated cluster for `storm zk dump`: supervisors registered in an in-memory tree, one
//! topology submitted, scheduled and activated exactly as Nimbus would, and no component run.
//! Each simulated supervisor is named after its host (a real supervisor's id is unique per
//! process, as Storm's UUIDs are), so assignments read `"1":"host1:6700"`.

use crate::cluster::coordination::layout::SupervisorInfo;
use crate::cluster::coordination::tree::SharedTree;
use crate::cluster::coordination::znode_store::CoordinationStore;
use crate::cluster::nimbus::cluster_state::{ClusterError, ClusterState};
use crate::model::plan::Plan;
use crate::model::Topology;
#[cfg(test)]
use std::collections::BTreeMap;
use std::time::Duration;

/// One simulated supervisor: a host and its worker ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SimSupervisor {
    host: String,
    ports: Vec<u16>,
}

/// `--slots HOST:PORT,...` as supervisors, one per host, hosts and ports in the order given.
pub(crate) fn parse_slots(specs: &[String]) -> Result<Vec<SimSupervisor>, String> {
    let mut hosts: Vec<SimSupervisor> = Vec::new();
    for spec in specs {
        let spec = spec.trim();
        let (host, port) = spec
            .rsplit_once(':')
            .ok_or_else(|| format!("--slots: `{spec}` is not HOST:PORT"))?;
        if host.is_empty() {
            return Err(format!("--slots: `{spec}` has no host"));
        }
        let port = port
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("--slots: `{spec}`: `{port}` is not a port (1-65535)"))?;
        match hosts.iter_mut().find(|s| s.host == host) {
            Some(s) if s.ports.contains(&port) => {
                return Err(format!("--slots: `{spec}` is given twice"))
            }
            Some(s) => s.ports.push(port),
            None => hosts.push(SimSupervisor {
                host: host.to_string(),
                ports: vec![port],
            }),
        }
    }
    Ok(hosts)
}

/// The default: one supervisor `localhost` with `supervisor.slots.ports`.
pub(crate) fn default_supervisors(topology: &Topology) -> Vec<SimSupervisor> {
    vec![SimSupervisor {
        host: "localhost".into(),
        ports: topology.config.slots_ports(),
    }]
}

/// The simulated cluster after the submission.
#[derive(Debug)]
pub(crate) struct Simulation {
    pub(crate) state: ClusterState<SharedTree>,
    #[cfg(test)]
    topology_id: String,
}

/// Register the supervisors, then submit, schedule and activate the topology at `now_secs`.
pub(crate) fn simulate(
    topology: &Topology,
    supervisors: &[SimSupervisor],
    now_secs: u64,
) -> Result<Simulation, ClusterError> {
    let store = SharedTree::new();
    let mut state = ClusterState::new(store.clone(), &topology.config.zookeeper_root())?;
    if let Some(dir) = topology
        .config
        .get("storm.local.dir")
        .and_then(|v| v.as_str())
    {
        state.local_dir = dir.to_string();
    }
    let timeout = topology.config.nimbus_task_timeout();
    for sup in supervisors {
        let session = store.open_session(timeout.max(Duration::from_secs(1)));
        let info = SupervisorInfo {
            hostname: sup.host.clone(),
            time_secs: now_secs,
            uptime_secs: 0,
            ports: sup.ports.clone(),
        };
        state.supervisor_heartbeat(session, &sup.host, &info)?;
    }
    let plan = Plan::new(topology);
    let id = state.submit(topology, &plan, now_secs)?;
    state.assign(&id, &plan, topology.config.workers(), now_secs)?;
    state.activate(&id)?;
    Ok(Simulation {
        state,
        #[cfg(test)]
        topology_id: id,
    })
}

#[cfg(test)]
/// Where each task landed, as `host:port` (for summaries).
fn task_addresses(sim: &Simulation) -> Result<BTreeMap<u32, String>, ClusterError> {
    let Some(a) = sim.state.assignment(&sim.topology_id)? else {
        return Ok(BTreeMap::new());
    };
    Ok(a.task_to_node_port
        .keys()
        .filter_map(|t| Some((*t, a.task_address(*t)?)))
        .collect())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cluster::coordination::dump;
    use crate::config::{Config, Origin};
    use crate::model::{Component, ComponentKind, ComponentType, Grouping, Stream};

    fn component(id: &str, ctype: ComponentType, parallelism: u32, out: &[&str]) -> Component {
        let kind = if ctype.can_be(ComponentKind::Bolt) {
            ComponentKind::Bolt
        } else {
            ComponentKind::Spout
        };
        let mut outputs = std::collections::BTreeMap::new();
        if !out.is_empty() {
            outputs.insert(
                "default".to_string(),
                out.iter().map(|s| s.to_string()).collect(),
            );
        }
        Component {
            id: id.into(),
            kind,
            ctype,
            args: serde_json::Map::new(),
            parallelism,
            tasks: parallelism,
            outputs,
            command: None,
            cwd: None,
            tick: None,
            finish: false,
            stateful: false,
            chain: true,
            config: std::collections::BTreeMap::new(),
        }
    }

    fn stream(from: &str, to: &str, grouping: Grouping) -> Stream {
        Stream {
            from: from.into(),
            to: to.into(),
            stream: "default".into(),
            grouping,
            name: None,
        }
    }

    /// The README's word count, with the given configuration.
    pub(crate) fn wordcount(config: &[(&str, serde_json::Value)]) -> Topology {
        let mut c = Config::default();
        for (k, v) in config {
            c.set(*k, v.clone(), Origin::CommandLine);
        }
        Topology {
            name: "wordcount".into(),
            config: c,
            components: vec![
                component(
                    "lines",
                    ComponentType::from_name("stdin").expect("built-in"),
                    1,
                    &["line"],
                ),
                component(
                    "split",
                    ComponentType::from_name("split").expect("built-in"),
                    4,
                    &["word"],
                ),
                component(
                    "count",
                    ComponentType::from_name("count").expect("built-in"),
                    2,
                    &["word", "count"],
                ),
                component(
                    "print",
                    ComponentType::from_name("stdout").expect("built-in"),
                    1,
                    &[],
                ),
            ],
            streams: vec![
                stream("lines", "split", Grouping::Shuffle),
                stream("split", "count", Grouping::Fields(vec!["word".into()])),
                stream("count", "print", Grouping::Global),
            ],
            base_dir: ".".into(),
        }
    }

    fn slots(specs: &[&str]) -> Vec<SimSupervisor> {
        let specs: Vec<String> = specs.iter().map(|s| s.to_string()).collect();
        parse_slots(&specs).unwrap()
    }

    const T: u64 = 1764441600;

    #[test]
    fn dump_of_wordcount_on_the_default_localhost_supervisor() {
        let topo = wordcount(&[]);
        let sim = simulate(&topo, &default_supervisors(&topo), T).unwrap();
        assert_eq!(sim.topology_id, "wordcount-1-1764441600");
        insta::assert_snapshot!(dump::to_text(sim.state.store(), "/storm").unwrap());
    }

    #[test]
    fn dump_of_wordcount_on_two_hosts_with_two_workers() {
        let topo = wordcount(&[("topology.workers", 2.into())]);
        let sim = simulate(&topo, &slots(&["host1:6700", "host2:6700"]), T).unwrap();
        insta::assert_snapshot!(dump::to_text(sim.state.store(), "/storm").unwrap());
    }

    #[test]
    fn json_dump_of_wordcount_under_another_root() {
        let topo = wordcount(&[
            ("storm.zookeeper.root", "/apps/storm".into()),
            ("topology.acker.executors", 0.into()),
        ]);
        let sim = simulate(&topo, &slots(&["h:1", "h:2"]), T).unwrap();
        let doc = dump::to_json(sim.state.store(), "/apps/storm").unwrap();
        insta::assert_snapshot!(serde_json::to_string_pretty(&doc).unwrap());
    }

    #[test]
    fn spec_assignment_example_two_workers_on_four_slots() {
        // docs/coordination.md: 2 tasks with topology.workers: 2 land on host1:6700 and host2:6700.
        let mut topo = wordcount(&[
            ("topology.workers", 2.into()),
            ("topology.acker.executors", 0.into()),
        ]);
        topo.components.truncate(2);
        topo.components[1].parallelism = 1;
        topo.components[1].tasks = 1;
        let sups = slots(&["host1:6700", "host1:6701", "host2:6700", "host2:6701"]);
        let sim = simulate(&topo, &sups, T).unwrap();
        let placed = task_addresses(&sim).unwrap();
        assert_eq!(placed[&1], "host1:6700");
        assert_eq!(placed[&2], "host2:6700");
    }

    #[test]
    fn slots_are_parsed_per_host_and_checked() {
        assert_eq!(
            slots(&["a:1", "b:2", "a:3"]),
            vec![
                SimSupervisor {
                    host: "a".into(),
                    ports: vec![1, 3]
                },
                SimSupervisor {
                    host: "b".into(),
                    ports: vec![2]
                }
            ]
        );
        let err = |s: &str| parse_slots(&[s.to_string()]).err().unwrap_or_default();
        assert_eq!(err("host"), "--slots: `host` is not HOST:PORT");
        assert_eq!(err(":6700"), "--slots: `:6700` has no host");
        assert_eq!(err("h:0"), "--slots: `h:0`: `0` is not a port (1-65535)");
        assert_eq!(
            parse_slots(&["h:1".into(), "h:1".into()]),
            Err("--slots: `h:1` is given twice".into())
        );
    }

    #[test]
    fn no_ports_at_all_fails_to_schedule_with_a_clear_message() {
        let topo = wordcount(&[]);
        let sups = vec![SimSupervisor {
            host: "h".into(),
            ports: vec![],
        }];
        let err = simulate(&topo, &sups, T).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("no worker slots are available for 9 executors (are any supervisors running?)")
        );
    }
}
