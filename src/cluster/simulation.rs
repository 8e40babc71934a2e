//! A simulated cluster for `storm zk dump`: supervisors registered in an in-memory tree, one
//! topology submitted, scheduled and activated exactly as Nimbus would, and no component run.
//! Each simulated supervisor is named after its host (a real supervisor's id is unique per
//! process, as Storm's UUIDs are), so assignments read `"1":"host1:6700"`.

use super::layout::SupervisorInfo;
use super::nimbus_state::{ClusterError, ClusterState};
use super::store::CoordinationStore;
use super::tree::SharedTree;
use crate::topology::model::Topology;
use crate::topology::plan::Plan;
use std::collections::BTreeMap;
use std::time::Duration;

/// One simulated supervisor: a host and its worker ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimSupervisor {
    pub host: String,
    pub ports: Vec<u16>,
}

/// `--slots HOST:PORT,...` as supervisors, one per host, hosts and ports in the order given.
pub fn parse_slots(specs: &[String]) -> Result<Vec<SimSupervisor>, String> {
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
pub fn default_supervisors(topology: &Topology) -> Vec<SimSupervisor> {
    vec![SimSupervisor {
        host: "localhost".into(),
        ports: topology.config.slots_ports(),
    }]
}

/// The simulated cluster after the submission.
#[derive(Debug)]
pub struct Simulation {
    pub state: ClusterState<SharedTree>,
    pub topology_id: String,
}

/// Register the supervisors, then submit, schedule and activate the topology at `now_secs`.
pub fn simulate(
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
        topology_id: id,
    })
}

/// Where each task landed, as `host:port` (for summaries).
pub fn task_addresses(sim: &Simulation) -> Result<BTreeMap<u32, String>, ClusterError> {
    let Some(a) = sim.state.assignment(&sim.topology_id)? else {
        return Ok(BTreeMap::new());
    };
    Ok(a.task_to_node_port
        .keys()
        .filter_map(|t| Some((*t, a.task_address(*t)?)))
        .collect())
}
