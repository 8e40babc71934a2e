# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_storm_global_optspecs
    string join \n h/help V/version
end

function __fish_storm_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_storm_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_storm_using_subcommand
    set -l cmd (__fish_storm_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c storm -n "__fish_storm_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c storm -n "__fish_storm_needs_command" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_needs_command" -f -a "validate" -d 'Parse and check topology files; print `ok: FILE` lines or located errors'
complete -c storm -n "__fish_storm_needs_command" -f -a "run" -d 'Run a topology (a shell filter when it reads stdin)'
complete -c storm -n "__fish_storm_needs_command" -f -a "zk" -d 'The coordination tree Storm would keep in ZooKeeper'
complete -c storm -n "__fish_storm_needs_command" -f -a "graph" -d 'Print the topology as a graph (Graphviz dot or Mermaid)'
complete -c storm -n "__fish_storm_needs_command" -f -a "config" -d 'Print the effective configuration, each key with where its value came from'
complete -c storm -n "__fish_storm_needs_command" -f -a "completions" -d 'Print a shell completion script'
complete -c storm -n "__fish_storm_needs_command" -f -a "nimbus" -d 'Run the cluster\'s master: holds the coordination tree, schedules topologies'
complete -c storm -n "__fish_storm_needs_command" -f -a "supervisor" -d 'Run a supervisor: starts a worker process for each slot assigned to it'
complete -c storm -n "__fish_storm_needs_command" -f -a "submit" -d 'Submit a topology to a running cluster'
complete -c storm -n "__fish_storm_needs_command" -f -a "list" -d 'List the topologies of a running cluster'
complete -c storm -n "__fish_storm_needs_command" -f -a "kill" -d 'Kill a topology on a running cluster'
complete -c storm -n "__fish_storm_needs_command" -f -a "activate" -d 'Activate a deactivated topology: its spouts emit again'
complete -c storm -n "__fish_storm_needs_command" -f -a "deactivate" -d 'Deactivate a topology: its spouts pause, tuples in flight complete'
complete -c storm -n "__fish_storm_needs_command" -f -a "rebalance" -d 'Re-place a running topology with new worker and executor counts (tasks are fixed)'
complete -c storm -n "__fish_storm_needs_command" -f -a "top" -d 'A live terminal view of a running topology\'s components (from its UI or nimbus)'
complete -c storm -n "__fish_storm_needs_command" -f -a "tap" -d 'Print the tuples a component emits, live, as JSON lines (from a run\'s UI)'
complete -c storm -n "__fish_storm_needs_command" -f -a "state" -d 'Show or remove the checkpoints a state dir keeps (`storm run --state-dir DIR`)'
complete -c storm -n "__fish_storm_needs_command" -f -a "local" -d 'Run a topology in this process (Storm 2.x\'s `storm local`; the same as `storm run`)'
complete -c storm -n "__fish_storm_needs_command" -f -a "jar" -d 'Storm\'s `storm jar`: there is no JVM here; says what to use instead (exit 2)'
complete -c storm -n "__fish_storm_needs_command" -f -a "version" -d 'Print this storm\'s version'
complete -c storm -n "__fish_storm_needs_command" -f -a "localconfvalue" -d 'Print one key of the local configuration (defaults, storm.yaml, -c), as `KEY: VALUE`'
complete -c storm -n "__fish_storm_needs_command" -f -a "remoteconfvalue" -d 'Print one key of nimbus\'s configuration, as `KEY: VALUE`'
complete -c storm -n "__fish_storm_needs_command" -f -a "get-errors" -d 'The last error of each component of a topology on a cluster, as Storm\'s JSON'
complete -c storm -n "__fish_storm_needs_command" -f -a "set_log_level" -d 'Set log levels of a running topology\'s processes, for a while or until reset'
complete -c storm -n "__fish_storm_needs_command" -f -a "logs" -d 'Print the logs of a topology\'s workers on a cluster (those running COMPONENT\'s tasks)'
complete -c storm -n "__fish_storm_needs_command" -f -a "monitor" -d 'Storm\'s throughput poll: a component\'s emitted and transferred tuples on one stream, a line per interval'
complete -c storm -n "__fish_storm_needs_command" -f -a "worker" -d 'Internal: one worker process (started by a supervisor)'
complete -c storm -n "__fish_storm_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c storm -n "__fish_storm_using_subcommand validate" -s e -l expr -d 'A topology inline, in the DSL' -r
complete -c storm -n "__fish_storm_using_subcommand validate" -l filter -d 'Properties file for Flux `${key}` substitution' -r -F
complete -c storm -n "__fish_storm_using_subcommand validate" -s c -l config -d 'Override one configuration key; VALUE is read as YAML (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand validate" -l format -d 'Output format of the diagnostics' -r -f -a "text\t''
json\t''"
complete -c storm -n "__fish_storm_using_subcommand validate" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand validate" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand run" -s e -l expr -d 'The topology inline, in the DSL (e.g. `stdin | split | count(word) | stdout`)' -r
complete -c storm -n "__fish_storm_using_subcommand run" -l filter -d 'Properties file for Flux `${key}` substitution' -r -F
complete -c storm -n "__fish_storm_using_subcommand run" -s c -l config -d 'Override one configuration key; VALUE is read as YAML (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand run" -l workers -d 'Number of workers (overrides topology.workers)' -r
complete -c storm -n "__fish_storm_using_subcommand run" -l nimbus -d 'Run attached on a running cluster' -r
complete -c storm -n "__fish_storm_using_subcommand run" -l duration -d 'Stop (gracefully, draining) after this long: `30s`, `2m`' -r
complete -c storm -n "__fish_storm_using_subcommand run" -l state-dir -d 'Keep checkpointed state in DIR (an embedded database per worker), and resume from what DIR holds (sets topology.state.dir and topology.state.provider=embedded)' -r -F
complete -c storm -n "__fish_storm_using_subcommand run" -l progress -d 'Progress display on stderr' -r -f -a "auto\t''
never\t''
always\t''"
complete -c storm -n "__fish_storm_using_subcommand run" -l stats -d 'Write the full run figures as JSON to FILE' -r -F
complete -c storm -n "__fish_storm_using_subcommand run" -l ui -d 'Serve the Storm UI, its REST API and /metrics while the run lasts [default ADDR: 127.0.0.1:8080; port 0 picks a free one]' -r
complete -c storm -n "__fish_storm_using_subcommand run" -l processes -d 'Run each worker as its own process, talking over loopback TCP'
complete -c storm -n "__fish_storm_using_subcommand run" -l fresh -d 'Start over: remove what the state dir holds first, even a damaged one (refused while a run holds it)'
complete -c storm -n "__fish_storm_using_subcommand run" -s q -l quiet -d 'Print nothing on stderr but errors (no summary)'
complete -c storm -n "__fish_storm_using_subcommand run" -l strict -d 'End the run with an error at the first input line that cannot be read, value that cannot be converted or late tuple (sets topology.strict=true)'
complete -c storm -n "__fish_storm_using_subcommand run" -l summary -d 'Print the per-component summary at the end even when stderr is not a terminal'
complete -c storm -n "__fish_storm_using_subcommand run" -l system -d 'Include system components (the acker, `__acker`) in the summary'
complete -c storm -n "__fish_storm_using_subcommand run" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand run" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand zk; and not __fish_seen_subcommand_from dump help" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand zk; and not __fish_seen_subcommand_from dump help" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand zk; and not __fish_seen_subcommand_from dump help" -f -a "dump" -d 'Submit to a simulated cluster and print the coordination tree (or a live one with --nimbus)'
complete -c storm -n "__fish_storm_using_subcommand zk; and not __fish_seen_subcommand_from dump help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c storm -n "__fish_storm_using_subcommand zk; and __fish_seen_subcommand_from dump" -s e -l expr -d 'A topology inline, in the DSL' -r
complete -c storm -n "__fish_storm_using_subcommand zk; and __fish_seen_subcommand_from dump" -l slots -d 'Supervisor slots: one supervisor per host named (default: localhost with supervisor.slots.ports)' -r
complete -c storm -n "__fish_storm_using_subcommand zk; and __fish_seen_subcommand_from dump" -l nimbus -d 'Print the live tree of a running cluster instead' -r
complete -c storm -n "__fish_storm_using_subcommand zk; and __fish_seen_subcommand_from dump" -l zookeeper -d 'Print the live tree held by a ZooKeeper ensemble (under storm.zookeeper.root)' -r
complete -c storm -n "__fish_storm_using_subcommand zk; and __fish_seen_subcommand_from dump" -l format -d 'Output format' -r -f -a "text\t''
json\t''"
complete -c storm -n "__fish_storm_using_subcommand zk; and __fish_seen_subcommand_from dump" -l fixed-time -d 'Use this Unix time (seconds) instead of the clock, for reproducible dumps' -r
complete -c storm -n "__fish_storm_using_subcommand zk; and __fish_seen_subcommand_from dump" -s c -l config -d 'Override one configuration key; VALUE is read as YAML (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand zk; and __fish_seen_subcommand_from dump" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand zk; and __fish_seen_subcommand_from dump" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand zk; and __fish_seen_subcommand_from help" -f -a "dump" -d 'Submit to a simulated cluster and print the coordination tree (or a live one with --nimbus)'
complete -c storm -n "__fish_storm_using_subcommand zk; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c storm -n "__fish_storm_using_subcommand graph" -s e -l expr -d 'The topology inline, in the DSL (e.g. `stdin | split | count(word) | stdout`)' -r
complete -c storm -n "__fish_storm_using_subcommand graph" -l filter -d 'Properties file for Flux `${key}` substitution' -r -F
complete -c storm -n "__fish_storm_using_subcommand graph" -s c -l config -d 'Override one configuration key; VALUE is read as YAML (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand graph" -l format -d 'Graph language' -r -f -a "dot\t''
mermaid\t''"
complete -c storm -n "__fish_storm_using_subcommand graph" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand graph" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand config" -l filter -d 'Properties file for Flux `${key}` substitution' -r -F
complete -c storm -n "__fish_storm_using_subcommand config" -s c -l config -d 'Override one configuration key; VALUE is read as YAML (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand config" -l unused -d 'List only the keys set that Storm knows but that have no effect here'
complete -c storm -n "__fish_storm_using_subcommand config" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand config" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand completions" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand completions" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand nimbus" -l listen -d 'Address to listen on' -r
complete -c storm -n "__fish_storm_using_subcommand nimbus" -l data -d 'Folder where the coordination tree is persisted' -r -F
complete -c storm -n "__fish_storm_using_subcommand nimbus" -s c -l config -d 'Override one configuration key; VALUE is read as YAML (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand nimbus" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand nimbus" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand supervisor" -l nimbus -d 'Nimbus address, or several comma-separated (default: nimbus.seeds)' -r
complete -c storm -n "__fish_storm_using_subcommand supervisor" -l host -d 'This supervisor\'s host name (what workers bind to and peers connect to)' -r
complete -c storm -n "__fish_storm_using_subcommand supervisor" -l slots -d 'Worker slot ports (default: supervisor.slots.ports)' -r
complete -c storm -n "__fish_storm_using_subcommand supervisor" -s c -l config -d 'Override one configuration key; VALUE is read as YAML (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand supervisor" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand supervisor" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand submit" -s e -l expr -d 'The topology inline, in the DSL (e.g. `stdin | split | count(word) | stdout`)' -r
complete -c storm -n "__fish_storm_using_subcommand submit" -l filter -d 'Properties file for Flux `${key}` substitution' -r -F
complete -c storm -n "__fish_storm_using_subcommand submit" -l nimbus -d 'Nimbus address, or several comma-separated (default: nimbus.seeds)' -r
complete -c storm -n "__fish_storm_using_subcommand submit" -s c -l config -d 'Override one configuration key; VALUE is read as YAML (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand submit" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand submit" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand list" -l nimbus -d 'Nimbus address, or several comma-separated (default: nimbus.seeds)' -r
complete -c storm -n "__fish_storm_using_subcommand list" -s c -l config -d 'Override one configuration key; VALUE is read as YAML (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand list" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand list" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand kill" -l nimbus -d 'Nimbus address, or several comma-separated (default: nimbus.seeds)' -r
complete -c storm -n "__fish_storm_using_subcommand kill" -s w -l wait -d 'Seconds to wait between deactivating and removing (default: the topology\'s topology.message.timeout.secs)' -r
complete -c storm -n "__fish_storm_using_subcommand kill" -s c -l config -d 'Override one configuration key; VALUE is read as YAML (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand kill" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand kill" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand activate" -l nimbus -d 'Nimbus address, or several comma-separated (default: nimbus.seeds)' -r
complete -c storm -n "__fish_storm_using_subcommand activate" -l ui -d 'The UI of a run or of nimbus (`storm run --ui`, nimbus\'s ui.port)' -r
complete -c storm -n "__fish_storm_using_subcommand activate" -l token -d 'The UI\'s token (ui.token or storm.cluster.secret), for operations through --ui' -r
complete -c storm -n "__fish_storm_using_subcommand activate" -s c -l config -d 'Override one configuration key; VALUE is read as YAML (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand activate" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand activate" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand deactivate" -l nimbus -d 'Nimbus address, or several comma-separated (default: nimbus.seeds)' -r
complete -c storm -n "__fish_storm_using_subcommand deactivate" -l ui -d 'The UI of a run or of nimbus (`storm run --ui`, nimbus\'s ui.port)' -r
complete -c storm -n "__fish_storm_using_subcommand deactivate" -l token -d 'The UI\'s token (ui.token or storm.cluster.secret), for operations through --ui' -r
complete -c storm -n "__fish_storm_using_subcommand deactivate" -s c -l config -d 'Override one configuration key; VALUE is read as YAML (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand deactivate" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand deactivate" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand rebalance" -s w -l wait -d 'Seconds the spouts stay deactivated before the switch, at most (default: the topology\'s message timeout; the switch comes sooner once no tuple tree is pending)' -r
complete -c storm -n "__fish_storm_using_subcommand rebalance" -s n -l num-workers -d 'The new number of workers (at most 256)' -r
complete -c storm -n "__fish_storm_using_subcommand rebalance" -s e -l executor -d 'A component\'s new number of executors, 1 to its task count (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand rebalance" -l nimbus -d 'Nimbus address, or several comma-separated (default: nimbus.seeds)' -r
complete -c storm -n "__fish_storm_using_subcommand rebalance" -l ui -d 'The UI of a run or of nimbus (`storm run --ui`, nimbus\'s ui.port)' -r
complete -c storm -n "__fish_storm_using_subcommand rebalance" -l token -d 'The UI\'s token (ui.token or storm.cluster.secret), for operations through --ui' -r
complete -c storm -n "__fish_storm_using_subcommand rebalance" -s c -l config -d 'Override one configuration key; VALUE is read as YAML (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand rebalance" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand rebalance" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand top" -l nimbus -d 'Nimbus address, or several comma-separated (default: nimbus.seeds)' -r
complete -c storm -n "__fish_storm_using_subcommand top" -l ui -d 'The UI of a run or of nimbus (`storm run --ui`, nimbus\'s ui.port)' -r
complete -c storm -n "__fish_storm_using_subcommand top" -l token -d 'The UI\'s token (ui.token or storm.cluster.secret), for operations through --ui' -r
complete -c storm -n "__fish_storm_using_subcommand top" -s c -l config -d 'Override one configuration key; VALUE is read as YAML (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand top" -l topology -d 'Topology name or id (default: the first one)' -r
complete -c storm -n "__fish_storm_using_subcommand top" -l interval -d 'Seconds between refreshes' -r
complete -c storm -n "__fish_storm_using_subcommand top" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand top" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand tap" -l stream -d 'Only the tuples of this stream' -r
complete -c storm -n "__fish_storm_using_subcommand tap" -l sample -d 'Show this share of the tuples (0 < R <= 1: one in round(1/R))' -r
complete -c storm -n "__fish_storm_using_subcommand tap" -l ui -d 'The UI of the run (`storm run FILE --ui ADDR`)' -r
complete -c storm -n "__fish_storm_using_subcommand tap" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand tap" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand state; and not __fish_seen_subcommand_from ls dump clear help" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand state; and not __fish_seen_subcommand_from ls dump clear help" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand state; and not __fish_seen_subcommand_from ls dump clear help" -f -a "ls" -d 'The topology, its last committed checkpoint, each task\'s entries and position, the files'
complete -c storm -n "__fish_storm_using_subcommand state; and not __fish_seen_subcommand_from ls dump clear help" -f -a "dump" -d 'Every committed entry, one a line: `component[index]  key  value` (JSON), or JSON lines'
complete -c storm -n "__fish_storm_using_subcommand state; and not __fish_seen_subcommand_from ls dump clear help" -f -a "clear" -d 'Remove a state dir and its checkpoints (only a dir holding checkpoint.redb)'
complete -c storm -n "__fish_storm_using_subcommand state; and not __fish_seen_subcommand_from ls dump clear help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c storm -n "__fish_storm_using_subcommand state; and __fish_seen_subcommand_from ls" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand state; and __fish_seen_subcommand_from ls" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand state; and __fish_seen_subcommand_from dump" -l format -r -f -a "text\t''
json\t''"
complete -c storm -n "__fish_storm_using_subcommand state; and __fish_seen_subcommand_from dump" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand state; and __fish_seen_subcommand_from dump" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand state; and __fish_seen_subcommand_from clear" -s y -l yes -d 'Do not ask (needed when standard input is not a terminal)'
complete -c storm -n "__fish_storm_using_subcommand state; and __fish_seen_subcommand_from clear" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand state; and __fish_seen_subcommand_from clear" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand state; and __fish_seen_subcommand_from help" -f -a "ls" -d 'The topology, its last committed checkpoint, each task\'s entries and position, the files'
complete -c storm -n "__fish_storm_using_subcommand state; and __fish_seen_subcommand_from help" -f -a "dump" -d 'Every committed entry, one a line: `component[index]  key  value` (JSON), or JSON lines'
complete -c storm -n "__fish_storm_using_subcommand state; and __fish_seen_subcommand_from help" -f -a "clear" -d 'Remove a state dir and its checkpoints (only a dir holding checkpoint.redb)'
complete -c storm -n "__fish_storm_using_subcommand state; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c storm -n "__fish_storm_using_subcommand local" -s e -l expr -d 'The topology inline, in the DSL (e.g. `stdin | split | count(word) | stdout`)' -r
complete -c storm -n "__fish_storm_using_subcommand local" -l filter -d 'Properties file for Flux `${key}` substitution' -r -F
complete -c storm -n "__fish_storm_using_subcommand local" -s c -l config -d 'Override one configuration key; VALUE is read as YAML (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand local" -l workers -d 'Number of workers (overrides topology.workers)' -r
complete -c storm -n "__fish_storm_using_subcommand local" -l nimbus -d 'Run attached on a running cluster' -r
complete -c storm -n "__fish_storm_using_subcommand local" -l duration -d 'Stop (gracefully, draining) after this long: `30s`, `2m`' -r
complete -c storm -n "__fish_storm_using_subcommand local" -l state-dir -d 'Keep checkpointed state in DIR (an embedded database per worker), and resume from what DIR holds (sets topology.state.dir and topology.state.provider=embedded)' -r -F
complete -c storm -n "__fish_storm_using_subcommand local" -l progress -d 'Progress display on stderr' -r -f -a "auto\t''
never\t''
always\t''"
complete -c storm -n "__fish_storm_using_subcommand local" -l stats -d 'Write the full run figures as JSON to FILE' -r -F
complete -c storm -n "__fish_storm_using_subcommand local" -l ui -d 'Serve the Storm UI, its REST API and /metrics while the run lasts [default ADDR: 127.0.0.1:8080; port 0 picks a free one]' -r
complete -c storm -n "__fish_storm_using_subcommand local" -l processes -d 'Run each worker as its own process, talking over loopback TCP'
complete -c storm -n "__fish_storm_using_subcommand local" -l fresh -d 'Start over: remove what the state dir holds first, even a damaged one (refused while a run holds it)'
complete -c storm -n "__fish_storm_using_subcommand local" -s q -l quiet -d 'Print nothing on stderr but errors (no summary)'
complete -c storm -n "__fish_storm_using_subcommand local" -l strict -d 'End the run with an error at the first input line that cannot be read, value that cannot be converted or late tuple (sets topology.strict=true)'
complete -c storm -n "__fish_storm_using_subcommand local" -l summary -d 'Print the per-component summary at the end even when stderr is not a terminal'
complete -c storm -n "__fish_storm_using_subcommand local" -l system -d 'Include system components (the acker, `__acker`) in the summary'
complete -c storm -n "__fish_storm_using_subcommand local" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand local" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand jar" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand jar" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand version" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand version" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand localconfvalue" -s c -l config -d 'Override one configuration key; VALUE is read as YAML (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand localconfvalue" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand localconfvalue" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand remoteconfvalue" -l nimbus -d 'Nimbus address, or several comma-separated (default: nimbus.seeds)' -r
complete -c storm -n "__fish_storm_using_subcommand remoteconfvalue" -s c -l config -d 'Override one configuration key; VALUE is read as YAML (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand remoteconfvalue" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand remoteconfvalue" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand get-errors" -l nimbus -d 'Nimbus address, or several comma-separated (default: nimbus.seeds)' -r
complete -c storm -n "__fish_storm_using_subcommand get-errors" -s c -l config -d 'Override one configuration key; VALUE is read as YAML (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand get-errors" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand get-errors" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand set_log_level" -s l -l level -d 'Set LOGGER (a module path such as `storm::runtime`, or ROOT) to LEVEL (ALL, TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF), for TIMEOUT seconds when given (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand set_log_level" -s r -l reset -d 'Put LOGGER back at its starting level (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand set_log_level" -l nimbus -d 'Nimbus address, or several comma-separated (default: nimbus.seeds)' -r
complete -c storm -n "__fish_storm_using_subcommand set_log_level" -l ui -d 'The UI of a run or of nimbus (`storm run --ui`, nimbus\'s ui.port)' -r
complete -c storm -n "__fish_storm_using_subcommand set_log_level" -l token -d 'The UI\'s token (ui.token or storm.cluster.secret), for operations through --ui' -r
complete -c storm -n "__fish_storm_using_subcommand set_log_level" -s c -l config -d 'Override one configuration key; VALUE is read as YAML (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand set_log_level" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand set_log_level" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand logs" -l length -d 'Bytes shown from the end of each worker\'s log' -r
complete -c storm -n "__fish_storm_using_subcommand logs" -l nimbus -d 'Nimbus address, or several comma-separated (default: nimbus.seeds)' -r
complete -c storm -n "__fish_storm_using_subcommand logs" -s c -l config -d 'Override one configuration key; VALUE is read as YAML (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand logs" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand logs" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand monitor" -s m -l component -d 'The component watched' -r
complete -c storm -n "__fish_storm_using_subcommand monitor" -s s -l stream -d 'The output stream watched' -r
complete -c storm -n "__fish_storm_using_subcommand monitor" -s i -l interval -d 'Seconds between two lines' -r
complete -c storm -n "__fish_storm_using_subcommand monitor" -s w -l watch -d 'The count the throughput is of' -r -f -a "emitted\t''
transferred\t''"
complete -c storm -n "__fish_storm_using_subcommand monitor" -l count -d 'Stop after this many lines (default: until interrupted)' -r
complete -c storm -n "__fish_storm_using_subcommand monitor" -l nimbus -d 'Nimbus address, or several comma-separated (default: nimbus.seeds)' -r
complete -c storm -n "__fish_storm_using_subcommand monitor" -l ui -d 'The UI of a run or of nimbus (`storm run --ui`, nimbus\'s ui.port)' -r
complete -c storm -n "__fish_storm_using_subcommand monitor" -l token -d 'The UI\'s token (ui.token or storm.cluster.secret), for operations through --ui' -r
complete -c storm -n "__fish_storm_using_subcommand monitor" -s c -l config -d 'Override one configuration key; VALUE is read as YAML (repeatable)' -r
complete -c storm -n "__fish_storm_using_subcommand monitor" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand monitor" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand worker" -l nimbus -d 'Nimbus address' -r
complete -c storm -n "__fish_storm_using_subcommand worker" -l topology -d 'Topology id' -r
complete -c storm -n "__fish_storm_using_subcommand worker" -l slot -d 'Host and port of this worker\'s slot' -r
complete -c storm -n "__fish_storm_using_subcommand worker" -l zookeeper -d 'The ZooKeeper ensemble (`host:port,...`) to write task heartbeats and errors to (instead of sending them to nimbus)' -r
complete -c storm -n "__fish_storm_using_subcommand worker" -l zookeeper-root -d '`storm.zookeeper.root`' -r
complete -c storm -n "__fish_storm_using_subcommand worker" -l zookeeper-session-ms -d '`storm.zookeeper.session.timeout`, in milliseconds' -r
complete -c storm -n "__fish_storm_using_subcommand worker" -l zookeeper-connection-ms -d '`storm.zookeeper.connection.timeout`, in milliseconds' -r
complete -c storm -n "__fish_storm_using_subcommand worker" -s h -l help -d 'Print help'
complete -c storm -n "__fish_storm_using_subcommand worker" -s V -l version -d 'Print version'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "validate" -d 'Parse and check topology files; print `ok: FILE` lines or located errors'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "run" -d 'Run a topology (a shell filter when it reads stdin)'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "zk" -d 'The coordination tree Storm would keep in ZooKeeper'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "graph" -d 'Print the topology as a graph (Graphviz dot or Mermaid)'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "config" -d 'Print the effective configuration, each key with where its value came from'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "completions" -d 'Print a shell completion script'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "nimbus" -d 'Run the cluster\'s master: holds the coordination tree, schedules topologies'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "supervisor" -d 'Run a supervisor: starts a worker process for each slot assigned to it'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "submit" -d 'Submit a topology to a running cluster'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "list" -d 'List the topologies of a running cluster'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "kill" -d 'Kill a topology on a running cluster'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "activate" -d 'Activate a deactivated topology: its spouts emit again'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "deactivate" -d 'Deactivate a topology: its spouts pause, tuples in flight complete'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "rebalance" -d 'Re-place a running topology with new worker and executor counts (tasks are fixed)'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "top" -d 'A live terminal view of a running topology\'s components (from its UI or nimbus)'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "tap" -d 'Print the tuples a component emits, live, as JSON lines (from a run\'s UI)'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "state" -d 'Show or remove the checkpoints a state dir keeps (`storm run --state-dir DIR`)'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "local" -d 'Run a topology in this process (Storm 2.x\'s `storm local`; the same as `storm run`)'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "jar" -d 'Storm\'s `storm jar`: there is no JVM here; says what to use instead (exit 2)'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "version" -d 'Print this storm\'s version'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "localconfvalue" -d 'Print one key of the local configuration (defaults, storm.yaml, -c), as `KEY: VALUE`'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "remoteconfvalue" -d 'Print one key of nimbus\'s configuration, as `KEY: VALUE`'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "get-errors" -d 'The last error of each component of a topology on a cluster, as Storm\'s JSON'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "set_log_level" -d 'Set log levels of a running topology\'s processes, for a while or until reset'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "logs" -d 'Print the logs of a topology\'s workers on a cluster (those running COMPONENT\'s tasks)'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "monitor" -d 'Storm\'s throughput poll: a component\'s emitted and transferred tuples on one stream, a line per interval'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "worker" -d 'Internal: one worker process (started by a supervisor)'
complete -c storm -n "__fish_storm_using_subcommand help; and not __fish_seen_subcommand_from validate run zk graph config completions nimbus supervisor submit list kill activate deactivate rebalance top tap state local jar version localconfvalue remoteconfvalue get-errors set_log_level logs monitor worker help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c storm -n "__fish_storm_using_subcommand help; and __fish_seen_subcommand_from zk" -f -a "dump" -d 'Submit to a simulated cluster and print the coordination tree (or a live one with --nimbus)'
complete -c storm -n "__fish_storm_using_subcommand help; and __fish_seen_subcommand_from state" -f -a "ls" -d 'The topology, its last committed checkpoint, each task\'s entries and position, the files'
complete -c storm -n "__fish_storm_using_subcommand help; and __fish_seen_subcommand_from state" -f -a "dump" -d 'Every committed entry, one a line: `component[index]  key  value` (JSON), or JSON lines'
complete -c storm -n "__fish_storm_using_subcommand help; and __fish_seen_subcommand_from state" -f -a "clear" -d 'Remove a state dir and its checkpoints (only a dir holding checkpoint.redb)'
