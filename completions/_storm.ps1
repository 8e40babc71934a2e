
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'storm' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'storm'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'storm' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('validate', 'validate', [CompletionResultType]::ParameterValue, 'Parse and check topology files; print `ok: FILE` lines or located errors')
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Run a topology (a shell filter when it reads stdin)')
            [CompletionResult]::new('zk', 'zk', [CompletionResultType]::ParameterValue, 'The coordination tree Storm would keep in ZooKeeper')
            [CompletionResult]::new('graph', 'graph', [CompletionResultType]::ParameterValue, 'Print the topology as a graph (Graphviz dot or Mermaid)')
            [CompletionResult]::new('config', 'config', [CompletionResultType]::ParameterValue, 'Print the effective configuration, each key with where its value came from')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('nimbus', 'nimbus', [CompletionResultType]::ParameterValue, 'Run the cluster''s master: holds the coordination tree, schedules topologies')
            [CompletionResult]::new('supervisor', 'supervisor', [CompletionResultType]::ParameterValue, 'Run a supervisor: starts a worker process for each slot assigned to it')
            [CompletionResult]::new('submit', 'submit', [CompletionResultType]::ParameterValue, 'Submit a topology to a running cluster')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the topologies of a running cluster')
            [CompletionResult]::new('kill', 'kill', [CompletionResultType]::ParameterValue, 'Kill a topology on a running cluster')
            [CompletionResult]::new('activate', 'activate', [CompletionResultType]::ParameterValue, 'Activate a deactivated topology: its spouts emit again')
            [CompletionResult]::new('deactivate', 'deactivate', [CompletionResultType]::ParameterValue, 'Deactivate a topology: its spouts pause, tuples in flight complete')
            [CompletionResult]::new('rebalance', 'rebalance', [CompletionResultType]::ParameterValue, 'Re-place a running topology with new worker and executor counts (tasks are fixed)')
            [CompletionResult]::new('top', 'top', [CompletionResultType]::ParameterValue, 'A live terminal view of a running topology''s components (from its UI or nimbus)')
            [CompletionResult]::new('tap', 'tap', [CompletionResultType]::ParameterValue, 'Print the tuples a component emits, live, as JSON lines (from a run''s UI)')
            [CompletionResult]::new('state', 'state', [CompletionResultType]::ParameterValue, 'Show or remove the checkpoints a state dir keeps (`storm run --state-dir DIR`)')
            [CompletionResult]::new('local', 'local', [CompletionResultType]::ParameterValue, 'Run a topology in this process (Storm 2.x''s `storm local`; the same as `storm run`)')
            [CompletionResult]::new('jar', 'jar', [CompletionResultType]::ParameterValue, 'Storm''s `storm jar`: there is no JVM here; says what to use instead (exit 2)')
            [CompletionResult]::new('version', 'version', [CompletionResultType]::ParameterValue, 'Print this storm''s version')
            [CompletionResult]::new('localconfvalue', 'localconfvalue', [CompletionResultType]::ParameterValue, 'Print one key of the local configuration (defaults, storm.yaml, -c), as `KEY: VALUE`')
            [CompletionResult]::new('remoteconfvalue', 'remoteconfvalue', [CompletionResultType]::ParameterValue, 'Print one key of nimbus''s configuration, as `KEY: VALUE`')
            [CompletionResult]::new('get-errors', 'get-errors', [CompletionResultType]::ParameterValue, 'The last error of each component of a topology on a cluster, as Storm''s JSON')
            [CompletionResult]::new('set_log_level', 'set_log_level', [CompletionResultType]::ParameterValue, 'Set log levels of a running topology''s processes, for a while or until reset')
            [CompletionResult]::new('logs', 'logs', [CompletionResultType]::ParameterValue, 'Print the logs of a topology''s workers on a cluster (those running COMPONENT''s tasks)')
            [CompletionResult]::new('monitor', 'monitor', [CompletionResultType]::ParameterValue, 'Storm''s throughput poll: a component''s emitted and transferred tuples on one stream, a line per interval')
            [CompletionResult]::new('worker', 'worker', [CompletionResultType]::ParameterValue, 'Internal: one worker process (started by a supervisor)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'storm;validate' {
            [CompletionResult]::new('-e', '-e', [CompletionResultType]::ParameterName, 'A topology inline, in the DSL')
            [CompletionResult]::new('--expr', '--expr', [CompletionResultType]::ParameterName, 'A topology inline, in the DSL')
            [CompletionResult]::new('--filter', '--filter', [CompletionResultType]::ParameterName, 'Properties file for Flux `${key}` substitution')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format of the diagnostics')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;run' {
            [CompletionResult]::new('-e', '-e', [CompletionResultType]::ParameterName, 'The topology inline, in the DSL (e.g. `stdin | split | count(word) | stdout`)')
            [CompletionResult]::new('--expr', '--expr', [CompletionResultType]::ParameterName, 'The topology inline, in the DSL (e.g. `stdin | split | count(word) | stdout`)')
            [CompletionResult]::new('--filter', '--filter', [CompletionResultType]::ParameterName, 'Properties file for Flux `${key}` substitution')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--workers', '--workers', [CompletionResultType]::ParameterName, 'Number of workers (overrides topology.workers)')
            [CompletionResult]::new('--nimbus', '--nimbus', [CompletionResultType]::ParameterName, 'Run attached on a running cluster')
            [CompletionResult]::new('--duration', '--duration', [CompletionResultType]::ParameterName, 'Stop (gracefully, draining) after this long: `30s`, `2m`')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep checkpointed state in DIR (an embedded database per worker), and resume from what DIR holds (sets topology.state.dir and topology.state.provider=embedded)')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Progress display on stderr')
            [CompletionResult]::new('--stats', '--stats', [CompletionResultType]::ParameterName, 'Write the full run figures as JSON to FILE')
            [CompletionResult]::new('--ui', '--ui', [CompletionResultType]::ParameterName, 'Serve the Storm UI, its REST API and /metrics while the run lasts [default ADDR: 127.0.0.1:8080; port 0 picks a free one]')
            [CompletionResult]::new('--processes', '--processes', [CompletionResultType]::ParameterName, 'Run each worker as its own process, talking over loopback TCP')
            [CompletionResult]::new('--fresh', '--fresh', [CompletionResultType]::ParameterName, 'Start over: remove what the state dir holds first, even a damaged one (refused while a run holds it)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print nothing on stderr but errors (no summary)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print nothing on stderr but errors (no summary)')
            [CompletionResult]::new('--strict', '--strict', [CompletionResultType]::ParameterName, 'End the run with an error at the first input line that cannot be read, value that cannot be converted or late tuple (sets topology.strict=true)')
            [CompletionResult]::new('--summary', '--summary', [CompletionResultType]::ParameterName, 'Print the per-component summary at the end even when stderr is not a terminal')
            [CompletionResult]::new('--system', '--system', [CompletionResultType]::ParameterName, 'Include system components (the acker, `__acker`) in the summary')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;zk' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('dump', 'dump', [CompletionResultType]::ParameterValue, 'Submit to a simulated cluster and print the coordination tree (or a live one with --nimbus)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'storm;zk;dump' {
            [CompletionResult]::new('-e', '-e', [CompletionResultType]::ParameterName, 'A topology inline, in the DSL')
            [CompletionResult]::new('--expr', '--expr', [CompletionResultType]::ParameterName, 'A topology inline, in the DSL')
            [CompletionResult]::new('--slots', '--slots', [CompletionResultType]::ParameterName, 'Supervisor slots: one supervisor per host named (default: localhost with supervisor.slots.ports)')
            [CompletionResult]::new('--nimbus', '--nimbus', [CompletionResultType]::ParameterName, 'Print the live tree of a running cluster instead')
            [CompletionResult]::new('--zookeeper', '--zookeeper', [CompletionResultType]::ParameterName, 'Print the live tree held by a ZooKeeper ensemble (under storm.zookeeper.root)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--fixed-time', '--fixed-time', [CompletionResultType]::ParameterName, 'Use this Unix time (seconds) instead of the clock, for reproducible dumps')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;zk;help' {
            [CompletionResult]::new('dump', 'dump', [CompletionResultType]::ParameterValue, 'Submit to a simulated cluster and print the coordination tree (or a live one with --nimbus)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'storm;zk;help;dump' {
            break
        }
        'storm;zk;help;help' {
            break
        }
        'storm;graph' {
            [CompletionResult]::new('-e', '-e', [CompletionResultType]::ParameterName, 'The topology inline, in the DSL (e.g. `stdin | split | count(word) | stdout`)')
            [CompletionResult]::new('--expr', '--expr', [CompletionResultType]::ParameterName, 'The topology inline, in the DSL (e.g. `stdin | split | count(word) | stdout`)')
            [CompletionResult]::new('--filter', '--filter', [CompletionResultType]::ParameterName, 'Properties file for Flux `${key}` substitution')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Graph language')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;config' {
            [CompletionResult]::new('--filter', '--filter', [CompletionResultType]::ParameterName, 'Properties file for Flux `${key}` substitution')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--unused', '--unused', [CompletionResultType]::ParameterName, 'List only the keys set that Storm knows but that have no effect here')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;completions' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;nimbus' {
            [CompletionResult]::new('--listen', '--listen', [CompletionResultType]::ParameterName, 'Address to listen on')
            [CompletionResult]::new('--data', '--data', [CompletionResultType]::ParameterName, 'Folder where the coordination tree is persisted')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;supervisor' {
            [CompletionResult]::new('--nimbus', '--nimbus', [CompletionResultType]::ParameterName, 'Nimbus address, or several comma-separated (default: nimbus.seeds)')
            [CompletionResult]::new('--host', '--host', [CompletionResultType]::ParameterName, 'This supervisor''s host name (what workers bind to and peers connect to)')
            [CompletionResult]::new('--slots', '--slots', [CompletionResultType]::ParameterName, 'Worker slot ports (default: supervisor.slots.ports)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;submit' {
            [CompletionResult]::new('-e', '-e', [CompletionResultType]::ParameterName, 'The topology inline, in the DSL (e.g. `stdin | split | count(word) | stdout`)')
            [CompletionResult]::new('--expr', '--expr', [CompletionResultType]::ParameterName, 'The topology inline, in the DSL (e.g. `stdin | split | count(word) | stdout`)')
            [CompletionResult]::new('--filter', '--filter', [CompletionResultType]::ParameterName, 'Properties file for Flux `${key}` substitution')
            [CompletionResult]::new('--nimbus', '--nimbus', [CompletionResultType]::ParameterName, 'Nimbus address, or several comma-separated (default: nimbus.seeds)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;list' {
            [CompletionResult]::new('--nimbus', '--nimbus', [CompletionResultType]::ParameterName, 'Nimbus address, or several comma-separated (default: nimbus.seeds)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;kill' {
            [CompletionResult]::new('--nimbus', '--nimbus', [CompletionResultType]::ParameterName, 'Nimbus address, or several comma-separated (default: nimbus.seeds)')
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'Seconds to wait between deactivating and removing (default: the topology''s topology.message.timeout.secs)')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Seconds to wait between deactivating and removing (default: the topology''s topology.message.timeout.secs)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;activate' {
            [CompletionResult]::new('--nimbus', '--nimbus', [CompletionResultType]::ParameterName, 'Nimbus address, or several comma-separated (default: nimbus.seeds)')
            [CompletionResult]::new('--ui', '--ui', [CompletionResultType]::ParameterName, 'The UI of a run or of nimbus (`storm run --ui`, nimbus''s ui.port)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'The UI''s token (ui.token or storm.cluster.secret), for operations through --ui')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;deactivate' {
            [CompletionResult]::new('--nimbus', '--nimbus', [CompletionResultType]::ParameterName, 'Nimbus address, or several comma-separated (default: nimbus.seeds)')
            [CompletionResult]::new('--ui', '--ui', [CompletionResultType]::ParameterName, 'The UI of a run or of nimbus (`storm run --ui`, nimbus''s ui.port)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'The UI''s token (ui.token or storm.cluster.secret), for operations through --ui')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;rebalance' {
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'Seconds the spouts stay deactivated before the switch, at most (default: the topology''s message timeout; the switch comes sooner once no tuple tree is pending)')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Seconds the spouts stay deactivated before the switch, at most (default: the topology''s message timeout; the switch comes sooner once no tuple tree is pending)')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'The new number of workers (at most 256)')
            [CompletionResult]::new('--num-workers', '--num-workers', [CompletionResultType]::ParameterName, 'The new number of workers (at most 256)')
            [CompletionResult]::new('-e', '-e', [CompletionResultType]::ParameterName, 'A component''s new number of executors, 1 to its task count (repeatable)')
            [CompletionResult]::new('--executor', '--executor', [CompletionResultType]::ParameterName, 'A component''s new number of executors, 1 to its task count (repeatable)')
            [CompletionResult]::new('--nimbus', '--nimbus', [CompletionResultType]::ParameterName, 'Nimbus address, or several comma-separated (default: nimbus.seeds)')
            [CompletionResult]::new('--ui', '--ui', [CompletionResultType]::ParameterName, 'The UI of a run or of nimbus (`storm run --ui`, nimbus''s ui.port)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'The UI''s token (ui.token or storm.cluster.secret), for operations through --ui')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;top' {
            [CompletionResult]::new('--nimbus', '--nimbus', [CompletionResultType]::ParameterName, 'Nimbus address, or several comma-separated (default: nimbus.seeds)')
            [CompletionResult]::new('--ui', '--ui', [CompletionResultType]::ParameterName, 'The UI of a run or of nimbus (`storm run --ui`, nimbus''s ui.port)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'The UI''s token (ui.token or storm.cluster.secret), for operations through --ui')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--topology', '--topology', [CompletionResultType]::ParameterName, 'Topology name or id (default: the first one)')
            [CompletionResult]::new('--interval', '--interval', [CompletionResultType]::ParameterName, 'Seconds between refreshes')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;tap' {
            [CompletionResult]::new('--stream', '--stream', [CompletionResultType]::ParameterName, 'Only the tuples of this stream')
            [CompletionResult]::new('--sample', '--sample', [CompletionResultType]::ParameterName, 'Show this share of the tuples (0 < R <= 1: one in round(1/R))')
            [CompletionResult]::new('--ui', '--ui', [CompletionResultType]::ParameterName, 'The UI of the run (`storm run FILE --ui ADDR`)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;state' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('ls', 'ls', [CompletionResultType]::ParameterValue, 'The topology, its last committed checkpoint, each task''s entries and position, the files')
            [CompletionResult]::new('dump', 'dump', [CompletionResultType]::ParameterValue, 'Every committed entry, one a line: `component[index]  key  value` (JSON), or JSON lines')
            [CompletionResult]::new('clear', 'clear', [CompletionResultType]::ParameterValue, 'Remove a state dir and its checkpoints (only a dir holding checkpoint.redb)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'storm;state;ls' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;state;dump' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'format')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;state;clear' {
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Do not ask (needed when standard input is not a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Do not ask (needed when standard input is not a terminal)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;state;help' {
            [CompletionResult]::new('ls', 'ls', [CompletionResultType]::ParameterValue, 'The topology, its last committed checkpoint, each task''s entries and position, the files')
            [CompletionResult]::new('dump', 'dump', [CompletionResultType]::ParameterValue, 'Every committed entry, one a line: `component[index]  key  value` (JSON), or JSON lines')
            [CompletionResult]::new('clear', 'clear', [CompletionResultType]::ParameterValue, 'Remove a state dir and its checkpoints (only a dir holding checkpoint.redb)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'storm;state;help;ls' {
            break
        }
        'storm;state;help;dump' {
            break
        }
        'storm;state;help;clear' {
            break
        }
        'storm;state;help;help' {
            break
        }
        'storm;local' {
            [CompletionResult]::new('-e', '-e', [CompletionResultType]::ParameterName, 'The topology inline, in the DSL (e.g. `stdin | split | count(word) | stdout`)')
            [CompletionResult]::new('--expr', '--expr', [CompletionResultType]::ParameterName, 'The topology inline, in the DSL (e.g. `stdin | split | count(word) | stdout`)')
            [CompletionResult]::new('--filter', '--filter', [CompletionResultType]::ParameterName, 'Properties file for Flux `${key}` substitution')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--workers', '--workers', [CompletionResultType]::ParameterName, 'Number of workers (overrides topology.workers)')
            [CompletionResult]::new('--nimbus', '--nimbus', [CompletionResultType]::ParameterName, 'Run attached on a running cluster')
            [CompletionResult]::new('--duration', '--duration', [CompletionResultType]::ParameterName, 'Stop (gracefully, draining) after this long: `30s`, `2m`')
            [CompletionResult]::new('--state-dir', '--state-dir', [CompletionResultType]::ParameterName, 'Keep checkpointed state in DIR (an embedded database per worker), and resume from what DIR holds (sets topology.state.dir and topology.state.provider=embedded)')
            [CompletionResult]::new('--progress', '--progress', [CompletionResultType]::ParameterName, 'Progress display on stderr')
            [CompletionResult]::new('--stats', '--stats', [CompletionResultType]::ParameterName, 'Write the full run figures as JSON to FILE')
            [CompletionResult]::new('--ui', '--ui', [CompletionResultType]::ParameterName, 'Serve the Storm UI, its REST API and /metrics while the run lasts [default ADDR: 127.0.0.1:8080; port 0 picks a free one]')
            [CompletionResult]::new('--processes', '--processes', [CompletionResultType]::ParameterName, 'Run each worker as its own process, talking over loopback TCP')
            [CompletionResult]::new('--fresh', '--fresh', [CompletionResultType]::ParameterName, 'Start over: remove what the state dir holds first, even a damaged one (refused while a run holds it)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print nothing on stderr but errors (no summary)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print nothing on stderr but errors (no summary)')
            [CompletionResult]::new('--strict', '--strict', [CompletionResultType]::ParameterName, 'End the run with an error at the first input line that cannot be read, value that cannot be converted or late tuple (sets topology.strict=true)')
            [CompletionResult]::new('--summary', '--summary', [CompletionResultType]::ParameterName, 'Print the per-component summary at the end even when stderr is not a terminal')
            [CompletionResult]::new('--system', '--system', [CompletionResultType]::ParameterName, 'Include system components (the acker, `__acker`) in the summary')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;jar' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;version' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;localconfvalue' {
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;remoteconfvalue' {
            [CompletionResult]::new('--nimbus', '--nimbus', [CompletionResultType]::ParameterName, 'Nimbus address, or several comma-separated (default: nimbus.seeds)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;get-errors' {
            [CompletionResult]::new('--nimbus', '--nimbus', [CompletionResultType]::ParameterName, 'Nimbus address, or several comma-separated (default: nimbus.seeds)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;set_log_level' {
            [CompletionResult]::new('-l', '-l', [CompletionResultType]::ParameterName, 'Set LOGGER (a module path such as `storm::runtime`, or ROOT) to LEVEL (ALL, TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF), for TIMEOUT seconds when given (repeatable)')
            [CompletionResult]::new('--level', '--level', [CompletionResultType]::ParameterName, 'Set LOGGER (a module path such as `storm::runtime`, or ROOT) to LEVEL (ALL, TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF), for TIMEOUT seconds when given (repeatable)')
            [CompletionResult]::new('-r', '-r', [CompletionResultType]::ParameterName, 'Put LOGGER back at its starting level (repeatable)')
            [CompletionResult]::new('--reset', '--reset', [CompletionResultType]::ParameterName, 'Put LOGGER back at its starting level (repeatable)')
            [CompletionResult]::new('--nimbus', '--nimbus', [CompletionResultType]::ParameterName, 'Nimbus address, or several comma-separated (default: nimbus.seeds)')
            [CompletionResult]::new('--ui', '--ui', [CompletionResultType]::ParameterName, 'The UI of a run or of nimbus (`storm run --ui`, nimbus''s ui.port)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'The UI''s token (ui.token or storm.cluster.secret), for operations through --ui')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;logs' {
            [CompletionResult]::new('--length', '--length', [CompletionResultType]::ParameterName, 'Bytes shown from the end of each worker''s log')
            [CompletionResult]::new('--nimbus', '--nimbus', [CompletionResultType]::ParameterName, 'Nimbus address, or several comma-separated (default: nimbus.seeds)')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;monitor' {
            [CompletionResult]::new('-m', '-m', [CompletionResultType]::ParameterName, 'The component watched')
            [CompletionResult]::new('--component', '--component', [CompletionResultType]::ParameterName, 'The component watched')
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'The output stream watched')
            [CompletionResult]::new('--stream', '--stream', [CompletionResultType]::ParameterName, 'The output stream watched')
            [CompletionResult]::new('-i', '-i', [CompletionResultType]::ParameterName, 'Seconds between two lines')
            [CompletionResult]::new('--interval', '--interval', [CompletionResultType]::ParameterName, 'Seconds between two lines')
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'The count the throughput is of')
            [CompletionResult]::new('--watch', '--watch', [CompletionResultType]::ParameterName, 'The count the throughput is of')
            [CompletionResult]::new('--count', '--count', [CompletionResultType]::ParameterName, 'Stop after this many lines (default: until interrupted)')
            [CompletionResult]::new('--nimbus', '--nimbus', [CompletionResultType]::ParameterName, 'Nimbus address, or several comma-separated (default: nimbus.seeds)')
            [CompletionResult]::new('--ui', '--ui', [CompletionResultType]::ParameterName, 'The UI of a run or of nimbus (`storm run --ui`, nimbus''s ui.port)')
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'The UI''s token (ui.token or storm.cluster.secret), for operations through --ui')
            [CompletionResult]::new('-c', '-c', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Override one configuration key; VALUE is read as YAML (repeatable)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;worker' {
            [CompletionResult]::new('--nimbus', '--nimbus', [CompletionResultType]::ParameterName, 'Nimbus address')
            [CompletionResult]::new('--topology', '--topology', [CompletionResultType]::ParameterName, 'Topology id')
            [CompletionResult]::new('--slot', '--slot', [CompletionResultType]::ParameterName, 'Host and port of this worker''s slot')
            [CompletionResult]::new('--zookeeper', '--zookeeper', [CompletionResultType]::ParameterName, 'The ZooKeeper ensemble (`host:port,...`) to write task heartbeats and errors to (instead of sending them to nimbus)')
            [CompletionResult]::new('--zookeeper-root', '--zookeeper-root', [CompletionResultType]::ParameterName, '`storm.zookeeper.root`')
            [CompletionResult]::new('--zookeeper-session-ms', '--zookeeper-session-ms', [CompletionResultType]::ParameterName, '`storm.zookeeper.session.timeout`, in milliseconds')
            [CompletionResult]::new('--zookeeper-connection-ms', '--zookeeper-connection-ms', [CompletionResultType]::ParameterName, '`storm.zookeeper.connection.timeout`, in milliseconds')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'storm;help' {
            [CompletionResult]::new('validate', 'validate', [CompletionResultType]::ParameterValue, 'Parse and check topology files; print `ok: FILE` lines or located errors')
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Run a topology (a shell filter when it reads stdin)')
            [CompletionResult]::new('zk', 'zk', [CompletionResultType]::ParameterValue, 'The coordination tree Storm would keep in ZooKeeper')
            [CompletionResult]::new('graph', 'graph', [CompletionResultType]::ParameterValue, 'Print the topology as a graph (Graphviz dot or Mermaid)')
            [CompletionResult]::new('config', 'config', [CompletionResultType]::ParameterValue, 'Print the effective configuration, each key with where its value came from')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('nimbus', 'nimbus', [CompletionResultType]::ParameterValue, 'Run the cluster''s master: holds the coordination tree, schedules topologies')
            [CompletionResult]::new('supervisor', 'supervisor', [CompletionResultType]::ParameterValue, 'Run a supervisor: starts a worker process for each slot assigned to it')
            [CompletionResult]::new('submit', 'submit', [CompletionResultType]::ParameterValue, 'Submit a topology to a running cluster')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the topologies of a running cluster')
            [CompletionResult]::new('kill', 'kill', [CompletionResultType]::ParameterValue, 'Kill a topology on a running cluster')
            [CompletionResult]::new('activate', 'activate', [CompletionResultType]::ParameterValue, 'Activate a deactivated topology: its spouts emit again')
            [CompletionResult]::new('deactivate', 'deactivate', [CompletionResultType]::ParameterValue, 'Deactivate a topology: its spouts pause, tuples in flight complete')
            [CompletionResult]::new('rebalance', 'rebalance', [CompletionResultType]::ParameterValue, 'Re-place a running topology with new worker and executor counts (tasks are fixed)')
            [CompletionResult]::new('top', 'top', [CompletionResultType]::ParameterValue, 'A live terminal view of a running topology''s components (from its UI or nimbus)')
            [CompletionResult]::new('tap', 'tap', [CompletionResultType]::ParameterValue, 'Print the tuples a component emits, live, as JSON lines (from a run''s UI)')
            [CompletionResult]::new('state', 'state', [CompletionResultType]::ParameterValue, 'Show or remove the checkpoints a state dir keeps (`storm run --state-dir DIR`)')
            [CompletionResult]::new('local', 'local', [CompletionResultType]::ParameterValue, 'Run a topology in this process (Storm 2.x''s `storm local`; the same as `storm run`)')
            [CompletionResult]::new('jar', 'jar', [CompletionResultType]::ParameterValue, 'Storm''s `storm jar`: there is no JVM here; says what to use instead (exit 2)')
            [CompletionResult]::new('version', 'version', [CompletionResultType]::ParameterValue, 'Print this storm''s version')
            [CompletionResult]::new('localconfvalue', 'localconfvalue', [CompletionResultType]::ParameterValue, 'Print one key of the local configuration (defaults, storm.yaml, -c), as `KEY: VALUE`')
            [CompletionResult]::new('remoteconfvalue', 'remoteconfvalue', [CompletionResultType]::ParameterValue, 'Print one key of nimbus''s configuration, as `KEY: VALUE`')
            [CompletionResult]::new('get-errors', 'get-errors', [CompletionResultType]::ParameterValue, 'The last error of each component of a topology on a cluster, as Storm''s JSON')
            [CompletionResult]::new('set_log_level', 'set_log_level', [CompletionResultType]::ParameterValue, 'Set log levels of a running topology''s processes, for a while or until reset')
            [CompletionResult]::new('logs', 'logs', [CompletionResultType]::ParameterValue, 'Print the logs of a topology''s workers on a cluster (those running COMPONENT''s tasks)')
            [CompletionResult]::new('monitor', 'monitor', [CompletionResultType]::ParameterValue, 'Storm''s throughput poll: a component''s emitted and transferred tuples on one stream, a line per interval')
            [CompletionResult]::new('worker', 'worker', [CompletionResultType]::ParameterValue, 'Internal: one worker process (started by a supervisor)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'storm;help;validate' {
            break
        }
        'storm;help;run' {
            break
        }
        'storm;help;zk' {
            [CompletionResult]::new('dump', 'dump', [CompletionResultType]::ParameterValue, 'Submit to a simulated cluster and print the coordination tree (or a live one with --nimbus)')
            break
        }
        'storm;help;zk;dump' {
            break
        }
        'storm;help;graph' {
            break
        }
        'storm;help;config' {
            break
        }
        'storm;help;completions' {
            break
        }
        'storm;help;nimbus' {
            break
        }
        'storm;help;supervisor' {
            break
        }
        'storm;help;submit' {
            break
        }
        'storm;help;list' {
            break
        }
        'storm;help;kill' {
            break
        }
        'storm;help;activate' {
            break
        }
        'storm;help;deactivate' {
            break
        }
        'storm;help;rebalance' {
            break
        }
        'storm;help;top' {
            break
        }
        'storm;help;tap' {
            break
        }
        'storm;help;state' {
            [CompletionResult]::new('ls', 'ls', [CompletionResultType]::ParameterValue, 'The topology, its last committed checkpoint, each task''s entries and position, the files')
            [CompletionResult]::new('dump', 'dump', [CompletionResultType]::ParameterValue, 'Every committed entry, one a line: `component[index]  key  value` (JSON), or JSON lines')
            [CompletionResult]::new('clear', 'clear', [CompletionResultType]::ParameterValue, 'Remove a state dir and its checkpoints (only a dir holding checkpoint.redb)')
            break
        }
        'storm;help;state;ls' {
            break
        }
        'storm;help;state;dump' {
            break
        }
        'storm;help;state;clear' {
            break
        }
        'storm;help;local' {
            break
        }
        'storm;help;jar' {
            break
        }
        'storm;help;version' {
            break
        }
        'storm;help;localconfvalue' {
            break
        }
        'storm;help;remoteconfvalue' {
            break
        }
        'storm;help;get-errors' {
            break
        }
        'storm;help;set_log_level' {
            break
        }
        'storm;help;logs' {
            break
        }
        'storm;help;monitor' {
            break
        }
        'storm;help;worker' {
            break
        }
        'storm;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
