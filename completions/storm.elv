
use builtin;
use str;

set edit:completion:arg-completer[storm] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'storm'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'storm'= {
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand validate 'Parse and check topology files; print `ok: FILE` lines or located errors'
            cand run 'Run a topology (a shell filter when it reads stdin)'
            cand zk 'The coordination tree Storm would keep in ZooKeeper'
            cand graph 'Print the topology as a graph (Graphviz dot or Mermaid)'
            cand config 'Print the effective configuration, each key with where its value came from'
            cand completions 'Print a shell completion script'
            cand nimbus 'Run the cluster''s master: holds the coordination tree, schedules topologies'
            cand supervisor 'Run a supervisor: starts a worker process for each slot assigned to it'
            cand submit 'Submit a topology to a running cluster'
            cand list 'List the topologies of a running cluster'
            cand kill 'Kill a topology on a running cluster'
            cand activate 'Activate a deactivated topology: its spouts emit again'
            cand deactivate 'Deactivate a topology: its spouts pause, tuples in flight complete'
            cand rebalance 'Re-place a running topology with new worker and executor counts (tasks are fixed)'
            cand top 'A live terminal view of a running topology''s components (from its UI or nimbus)'
            cand tap 'Print the tuples a component emits, live, as JSON lines (from a run''s UI)'
            cand state 'Show or remove the checkpoints a state dir keeps (`storm run --state-dir DIR`)'
            cand local 'Run a topology in this process (Storm 2.x''s `storm local`; the same as `storm run`)'
            cand jar 'Storm''s `storm jar`: there is no JVM here; says what to use instead (exit 2)'
            cand version 'Print this storm''s version'
            cand localconfvalue 'Print one key of the local configuration (defaults, storm.yaml, -c), as `KEY: VALUE`'
            cand remoteconfvalue 'Print one key of nimbus''s configuration, as `KEY: VALUE`'
            cand get-errors 'The last error of each component of a topology on a cluster, as Storm''s JSON'
            cand set_log_level 'Set log levels of a running topology''s processes, for a while or until reset'
            cand logs 'Print the logs of a topology''s workers on a cluster (those running COMPONENT''s tasks)'
            cand monitor 'Storm''s throughput poll: a component''s emitted and transferred tuples on one stream, a line per interval'
            cand worker 'Internal: one worker process (started by a supervisor)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'storm;validate'= {
            cand -e 'A topology inline, in the DSL'
            cand --expr 'A topology inline, in the DSL'
            cand --filter 'Properties file for Flux `${key}` substitution'
            cand -c 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --config 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --format 'Output format of the diagnostics'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;run'= {
            cand -e 'The topology inline, in the DSL (e.g. `stdin | split | count(word) | stdout`)'
            cand --expr 'The topology inline, in the DSL (e.g. `stdin | split | count(word) | stdout`)'
            cand --filter 'Properties file for Flux `${key}` substitution'
            cand -c 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --config 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --workers 'Number of workers (overrides topology.workers)'
            cand --nimbus 'Run attached on a running cluster'
            cand --duration 'Stop (gracefully, draining) after this long: `30s`, `2m`'
            cand --state-dir 'Keep checkpointed state in DIR (an embedded database per worker), and resume from what DIR holds (sets topology.state.dir and topology.state.provider=embedded)'
            cand --progress 'Progress display on stderr'
            cand --stats 'Write the full run figures as JSON to FILE'
            cand --ui 'Serve the Storm UI, its REST API and /metrics while the run lasts [default ADDR: 127.0.0.1:8080; port 0 picks a free one]'
            cand --processes 'Run each worker as its own process, talking over loopback TCP'
            cand --fresh 'Start over: remove what the state dir holds first, even a damaged one (refused while a run holds it)'
            cand -q 'Print nothing on stderr but errors (no summary)'
            cand --quiet 'Print nothing on stderr but errors (no summary)'
            cand --strict 'End the run with an error at the first input line that cannot be read, value that cannot be converted or late tuple (sets topology.strict=true)'
            cand --summary 'Print the per-component summary at the end even when stderr is not a terminal'
            cand --system 'Include system components (the acker, `__acker`) in the summary'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;zk'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand dump 'Submit to a simulated cluster and print the coordination tree (or a live one with --nimbus)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'storm;zk;dump'= {
            cand -e 'A topology inline, in the DSL'
            cand --expr 'A topology inline, in the DSL'
            cand --slots 'Supervisor slots: one supervisor per host named (default: localhost with supervisor.slots.ports)'
            cand --nimbus 'Print the live tree of a running cluster instead'
            cand --zookeeper 'Print the live tree held by a ZooKeeper ensemble (under storm.zookeeper.root)'
            cand --format 'Output format'
            cand --fixed-time 'Use this Unix time (seconds) instead of the clock, for reproducible dumps'
            cand -c 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --config 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;zk;help'= {
            cand dump 'Submit to a simulated cluster and print the coordination tree (or a live one with --nimbus)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'storm;zk;help;dump'= {
        }
        &'storm;zk;help;help'= {
        }
        &'storm;graph'= {
            cand -e 'The topology inline, in the DSL (e.g. `stdin | split | count(word) | stdout`)'
            cand --expr 'The topology inline, in the DSL (e.g. `stdin | split | count(word) | stdout`)'
            cand --filter 'Properties file for Flux `${key}` substitution'
            cand -c 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --config 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --format 'Graph language'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;config'= {
            cand --filter 'Properties file for Flux `${key}` substitution'
            cand -c 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --config 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --unused 'List only the keys set that Storm knows but that have no effect here'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;completions'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;nimbus'= {
            cand --listen 'Address to listen on'
            cand --data 'Folder where the coordination tree is persisted'
            cand -c 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --config 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;supervisor'= {
            cand --nimbus 'Nimbus address, or several comma-separated (default: nimbus.seeds)'
            cand --host 'This supervisor''s host name (what workers bind to and peers connect to)'
            cand --slots 'Worker slot ports (default: supervisor.slots.ports)'
            cand -c 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --config 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;submit'= {
            cand -e 'The topology inline, in the DSL (e.g. `stdin | split | count(word) | stdout`)'
            cand --expr 'The topology inline, in the DSL (e.g. `stdin | split | count(word) | stdout`)'
            cand --filter 'Properties file for Flux `${key}` substitution'
            cand --nimbus 'Nimbus address, or several comma-separated (default: nimbus.seeds)'
            cand -c 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --config 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;list'= {
            cand --nimbus 'Nimbus address, or several comma-separated (default: nimbus.seeds)'
            cand -c 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --config 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;kill'= {
            cand --nimbus 'Nimbus address, or several comma-separated (default: nimbus.seeds)'
            cand -w 'Seconds to wait between deactivating and removing (default: the topology''s topology.message.timeout.secs)'
            cand --wait 'Seconds to wait between deactivating and removing (default: the topology''s topology.message.timeout.secs)'
            cand -c 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --config 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;activate'= {
            cand --nimbus 'Nimbus address, or several comma-separated (default: nimbus.seeds)'
            cand --ui 'The UI of a run or of nimbus (`storm run --ui`, nimbus''s ui.port)'
            cand --token 'The UI''s token (ui.token or storm.cluster.secret), for operations through --ui'
            cand -c 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --config 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;deactivate'= {
            cand --nimbus 'Nimbus address, or several comma-separated (default: nimbus.seeds)'
            cand --ui 'The UI of a run or of nimbus (`storm run --ui`, nimbus''s ui.port)'
            cand --token 'The UI''s token (ui.token or storm.cluster.secret), for operations through --ui'
            cand -c 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --config 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;rebalance'= {
            cand -w 'Seconds the spouts stay deactivated before the switch, at most (default: the topology''s message timeout; the switch comes sooner once no tuple tree is pending)'
            cand --wait 'Seconds the spouts stay deactivated before the switch, at most (default: the topology''s message timeout; the switch comes sooner once no tuple tree is pending)'
            cand -n 'The new number of workers (at most 256)'
            cand --num-workers 'The new number of workers (at most 256)'
            cand -e 'A component''s new number of executors, 1 to its task count (repeatable)'
            cand --executor 'A component''s new number of executors, 1 to its task count (repeatable)'
            cand --nimbus 'Nimbus address, or several comma-separated (default: nimbus.seeds)'
            cand --ui 'The UI of a run or of nimbus (`storm run --ui`, nimbus''s ui.port)'
            cand --token 'The UI''s token (ui.token or storm.cluster.secret), for operations through --ui'
            cand -c 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --config 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;top'= {
            cand --nimbus 'Nimbus address, or several comma-separated (default: nimbus.seeds)'
            cand --ui 'The UI of a run or of nimbus (`storm run --ui`, nimbus''s ui.port)'
            cand --token 'The UI''s token (ui.token or storm.cluster.secret), for operations through --ui'
            cand -c 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --config 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --topology 'Topology name or id (default: the first one)'
            cand --interval 'Seconds between refreshes'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;tap'= {
            cand --stream 'Only the tuples of this stream'
            cand --sample 'Show this share of the tuples (0 < R <= 1: one in round(1/R))'
            cand --ui 'The UI of the run (`storm run FILE --ui ADDR`)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;state'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand ls 'The topology, its last committed checkpoint, each task''s entries and position, the files'
            cand dump 'Every committed entry, one a line: `component[index]  key  value` (JSON), or JSON lines'
            cand clear 'Remove a state dir and its checkpoints (only a dir holding checkpoint.redb)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'storm;state;ls'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;state;dump'= {
            cand --format 'format'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;state;clear'= {
            cand -y 'Do not ask (needed when standard input is not a terminal)'
            cand --yes 'Do not ask (needed when standard input is not a terminal)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;state;help'= {
            cand ls 'The topology, its last committed checkpoint, each task''s entries and position, the files'
            cand dump 'Every committed entry, one a line: `component[index]  key  value` (JSON), or JSON lines'
            cand clear 'Remove a state dir and its checkpoints (only a dir holding checkpoint.redb)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'storm;state;help;ls'= {
        }
        &'storm;state;help;dump'= {
        }
        &'storm;state;help;clear'= {
        }
        &'storm;state;help;help'= {
        }
        &'storm;local'= {
            cand -e 'The topology inline, in the DSL (e.g. `stdin | split | count(word) | stdout`)'
            cand --expr 'The topology inline, in the DSL (e.g. `stdin | split | count(word) | stdout`)'
            cand --filter 'Properties file for Flux `${key}` substitution'
            cand -c 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --config 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --workers 'Number of workers (overrides topology.workers)'
            cand --nimbus 'Run attached on a running cluster'
            cand --duration 'Stop (gracefully, draining) after this long: `30s`, `2m`'
            cand --state-dir 'Keep checkpointed state in DIR (an embedded database per worker), and resume from what DIR holds (sets topology.state.dir and topology.state.provider=embedded)'
            cand --progress 'Progress display on stderr'
            cand --stats 'Write the full run figures as JSON to FILE'
            cand --ui 'Serve the Storm UI, its REST API and /metrics while the run lasts [default ADDR: 127.0.0.1:8080; port 0 picks a free one]'
            cand --processes 'Run each worker as its own process, talking over loopback TCP'
            cand --fresh 'Start over: remove what the state dir holds first, even a damaged one (refused while a run holds it)'
            cand -q 'Print nothing on stderr but errors (no summary)'
            cand --quiet 'Print nothing on stderr but errors (no summary)'
            cand --strict 'End the run with an error at the first input line that cannot be read, value that cannot be converted or late tuple (sets topology.strict=true)'
            cand --summary 'Print the per-component summary at the end even when stderr is not a terminal'
            cand --system 'Include system components (the acker, `__acker`) in the summary'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;jar'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;version'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;localconfvalue'= {
            cand -c 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --config 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;remoteconfvalue'= {
            cand --nimbus 'Nimbus address, or several comma-separated (default: nimbus.seeds)'
            cand -c 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --config 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;get-errors'= {
            cand --nimbus 'Nimbus address, or several comma-separated (default: nimbus.seeds)'
            cand -c 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --config 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;set_log_level'= {
            cand -l 'Set LOGGER (a module path such as `storm::runtime`, or ROOT) to LEVEL (ALL, TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF), for TIMEOUT seconds when given (repeatable)'
            cand --level 'Set LOGGER (a module path such as `storm::runtime`, or ROOT) to LEVEL (ALL, TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF), for TIMEOUT seconds when given (repeatable)'
            cand -r 'Put LOGGER back at its starting level (repeatable)'
            cand --reset 'Put LOGGER back at its starting level (repeatable)'
            cand --nimbus 'Nimbus address, or several comma-separated (default: nimbus.seeds)'
            cand --ui 'The UI of a run or of nimbus (`storm run --ui`, nimbus''s ui.port)'
            cand --token 'The UI''s token (ui.token or storm.cluster.secret), for operations through --ui'
            cand -c 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --config 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;logs'= {
            cand --length 'Bytes shown from the end of each worker''s log'
            cand --nimbus 'Nimbus address, or several comma-separated (default: nimbus.seeds)'
            cand -c 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --config 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;monitor'= {
            cand -m 'The component watched'
            cand --component 'The component watched'
            cand -s 'The output stream watched'
            cand --stream 'The output stream watched'
            cand -i 'Seconds between two lines'
            cand --interval 'Seconds between two lines'
            cand -w 'The count the throughput is of'
            cand --watch 'The count the throughput is of'
            cand --count 'Stop after this many lines (default: until interrupted)'
            cand --nimbus 'Nimbus address, or several comma-separated (default: nimbus.seeds)'
            cand --ui 'The UI of a run or of nimbus (`storm run --ui`, nimbus''s ui.port)'
            cand --token 'The UI''s token (ui.token or storm.cluster.secret), for operations through --ui'
            cand -c 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand --config 'Override one configuration key; VALUE is read as YAML (repeatable)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;worker'= {
            cand --nimbus 'Nimbus address'
            cand --topology 'Topology id'
            cand --slot 'Host and port of this worker''s slot'
            cand --zookeeper 'The ZooKeeper ensemble (`host:port,...`) to write task heartbeats and errors to (instead of sending them to nimbus)'
            cand --zookeeper-root '`storm.zookeeper.root`'
            cand --zookeeper-session-ms '`storm.zookeeper.session.timeout`, in milliseconds'
            cand --zookeeper-connection-ms '`storm.zookeeper.connection.timeout`, in milliseconds'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'storm;help'= {
            cand validate 'Parse and check topology files; print `ok: FILE` lines or located errors'
            cand run 'Run a topology (a shell filter when it reads stdin)'
            cand zk 'The coordination tree Storm would keep in ZooKeeper'
            cand graph 'Print the topology as a graph (Graphviz dot or Mermaid)'
            cand config 'Print the effective configuration, each key with where its value came from'
            cand completions 'Print a shell completion script'
            cand nimbus 'Run the cluster''s master: holds the coordination tree, schedules topologies'
            cand supervisor 'Run a supervisor: starts a worker process for each slot assigned to it'
            cand submit 'Submit a topology to a running cluster'
            cand list 'List the topologies of a running cluster'
            cand kill 'Kill a topology on a running cluster'
            cand activate 'Activate a deactivated topology: its spouts emit again'
            cand deactivate 'Deactivate a topology: its spouts pause, tuples in flight complete'
            cand rebalance 'Re-place a running topology with new worker and executor counts (tasks are fixed)'
            cand top 'A live terminal view of a running topology''s components (from its UI or nimbus)'
            cand tap 'Print the tuples a component emits, live, as JSON lines (from a run''s UI)'
            cand state 'Show or remove the checkpoints a state dir keeps (`storm run --state-dir DIR`)'
            cand local 'Run a topology in this process (Storm 2.x''s `storm local`; the same as `storm run`)'
            cand jar 'Storm''s `storm jar`: there is no JVM here; says what to use instead (exit 2)'
            cand version 'Print this storm''s version'
            cand localconfvalue 'Print one key of the local configuration (defaults, storm.yaml, -c), as `KEY: VALUE`'
            cand remoteconfvalue 'Print one key of nimbus''s configuration, as `KEY: VALUE`'
            cand get-errors 'The last error of each component of a topology on a cluster, as Storm''s JSON'
            cand set_log_level 'Set log levels of a running topology''s processes, for a while or until reset'
            cand logs 'Print the logs of a topology''s workers on a cluster (those running COMPONENT''s tasks)'
            cand monitor 'Storm''s throughput poll: a component''s emitted and transferred tuples on one stream, a line per interval'
            cand worker 'Internal: one worker process (started by a supervisor)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'storm;help;validate'= {
        }
        &'storm;help;run'= {
        }
        &'storm;help;zk'= {
            cand dump 'Submit to a simulated cluster and print the coordination tree (or a live one with --nimbus)'
        }
        &'storm;help;zk;dump'= {
        }
        &'storm;help;graph'= {
        }
        &'storm;help;config'= {
        }
        &'storm;help;completions'= {
        }
        &'storm;help;nimbus'= {
        }
        &'storm;help;supervisor'= {
        }
        &'storm;help;submit'= {
        }
        &'storm;help;list'= {
        }
        &'storm;help;kill'= {
        }
        &'storm;help;activate'= {
        }
        &'storm;help;deactivate'= {
        }
        &'storm;help;rebalance'= {
        }
        &'storm;help;top'= {
        }
        &'storm;help;tap'= {
        }
        &'storm;help;state'= {
            cand ls 'The topology, its last committed checkpoint, each task''s entries and position, the files'
            cand dump 'Every committed entry, one a line: `component[index]  key  value` (JSON), or JSON lines'
            cand clear 'Remove a state dir and its checkpoints (only a dir holding checkpoint.redb)'
        }
        &'storm;help;state;ls'= {
        }
        &'storm;help;state;dump'= {
        }
        &'storm;help;state;clear'= {
        }
        &'storm;help;local'= {
        }
        &'storm;help;jar'= {
        }
        &'storm;help;version'= {
        }
        &'storm;help;localconfvalue'= {
        }
        &'storm;help;remoteconfvalue'= {
        }
        &'storm;help;get-errors'= {
        }
        &'storm;help;set_log_level'= {
        }
        &'storm;help;logs'= {
        }
        &'storm;help;monitor'= {
        }
        &'storm;help;worker'= {
        }
        &'storm;help;help'= {
        }
    ]
    $completions[$command]
}
