#!/usr/bin/env python3
"""Flood a real nimbus or worker port and print what it cost, as one JSON line.

usage: scripts/flood.py STORM_BINARY SCENARIO

  nimbus-announce  30 connections each announce a 16 MiB request and send all of it but the
                   last byte: nimbus's peak RSS (VmHWM), and whether `storm list` still works
  nimbus-emfile    nimbus under `ulimit -n 40` and 60 idle connections: bytes of log it
                   writes and CPU it uses over 12 s
  worker-partial   a one-slot cluster; 10 connections to the worker's port each announce a
                   64 MiB frame and send 59 MiB of it: the worker's peak RSS, connections cut

The figures are in docs/reliability-cluster.md."""
import os, socket, struct, subprocess, sys, tempfile, time, json, resource, signal

exe, scenario = sys.argv[1], sys.argv[2]
tmp = tempfile.mkdtemp()
env = dict(os.environ); env.pop('STORM_CLUSTER_SECRET', None); env['STORM_LOG'] = 'warn'

def free_port():
    s = socket.socket(); s.bind(('127.0.0.1', 0)); p = s.getsockname()[1]; s.close(); return p

def hwm(pid):
    for l in open(f'/proc/{pid}/status'):
        if l.startswith('VmHWM:'): return int(l.split()[1]) // 1024
def rss(pid):
    for l in open(f'/proc/{pid}/status'):
        if l.startswith('VmRSS:'): return int(l.split()[1]) // 1024
def cpu(pid):
    f = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf('SC_CLK_TCK')

def wait_list(addr):
    for _ in range(300):
        if subprocess.run([exe, 'list', '--nimbus', addr], env=env, capture_output=True).returncode == 0: return
        time.sleep(0.1)
    raise SystemExit('nimbus did not answer')

procs = []
def start(args, log, pre=None):
    p = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=open(log, 'wb'), preexec_fn=pre)
    procs.append(p); return p

try:
    addr = f'127.0.0.1:{free_port()}'
    if scenario == 'nimbus-announce':
        n = start([exe, 'nimbus', '--listen', addr, '--data', f'{tmp}/nimbus'], f'{tmp}/nimbus.log')
        wait_list(addr)
        base = hwm(n.pid)
        conns = []
        body = b' ' * (16 << 20)
        for i in range(30):
            s = socket.create_connection(('127.0.0.1', int(addr.split(':')[1])))
            s.settimeout(20)
            try:
                s.sendall(struct.pack('>I', 16 << 20)); s.sendall(body[:-1])
            except OSError as e:
                pass
            conns.append(s)
        time.sleep(1)
        ok = subprocess.run([exe, 'list', '--nimbus', addr], env=env, capture_output=True).returncode == 0
        print(json.dumps({'scenario': scenario, 'idle_hwm_mib': base, 'peak_hwm_mib': hwm(n.pid), 'list_ok_during': ok}))
    elif scenario == 'nimbus-emfile':
        def low(): resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40))
        n = start([exe, 'nimbus', '--listen', addr, '--data', f'{tmp}/nimbus'], f'{tmp}/nimbus.log', low)
        wait_list(addr)
        conns = []
        for i in range(60):
            try: conns.append(socket.create_connection(('127.0.0.1', int(addr.split(':')[1])), timeout=2))
            except OSError: pass
        c0, t0 = cpu(n.pid), time.time()
        size0 = os.path.getsize(f'{tmp}/nimbus.log')
        time.sleep(12)
        print(json.dumps({'scenario': scenario, 'log_bytes_in_12s': os.path.getsize(f'{tmp}/nimbus.log') - size0,
                          'cpu_percent': round(100 * (cpu(n.pid) - c0) / (time.time() - t0), 1)}))
    elif scenario == 'worker-partial':
        n = start([exe, 'nimbus', '--listen', addr, '--data', f'{tmp}/nimbus'], f'{tmp}/nimbus.log')
        wait_list(addr)
        port = free_port()
        start([exe, 'supervisor', '--nimbus', addr, '--host', '127.0.0.1', '--slots', str(port)], f'{tmp}/sup.log')
        topo = f'{tmp}/t.yaml'
        open(topo, 'w').write('name: flood\nconfig:\n  topology.acker.executors: 0\nspouts:\n  - id: gen\n    type: generate\n    args: { count: 100000000, rate: 10, values: [[a]] }\nbolts:\n  - id: sink\n    type: discard\nstreams:\n  - from: gen\n    to: sink\n')
        time.sleep(1)
        subprocess.run([exe, 'submit', topo, '--nimbus', addr], env=env, check=True, capture_output=True)
        wpid = None
        for _ in range(300):
            for d in os.listdir('/proc'):
                if not d.isdigit(): continue
                try: cmd = open(f'/proc/{d}/cmdline', 'rb').read().split(b'\0')
                except OSError: continue
                if len(cmd) > 1 and cmd[1] == b'worker' and str(port).encode() in b' '.join(cmd) and cmd[0].decode() == exe:
                    wpid = int(d)
            if wpid:
                try:
                    socket.create_connection(('127.0.0.1', port), timeout=1).close(); break
                except OSError: pass
            time.sleep(0.1)
        time.sleep(1)
        base = hwm(wpid)
        conns = []
        chunk = b'\0' * (1 << 20)
        cut = 0
        for i in range(10):
            s = socket.create_connection(('127.0.0.1', port)); s.settimeout(10)
            try:
                s.sendall(struct.pack('>IBI', 64 << 20, 16, 0))
                for _ in range(59): s.sendall(chunk)
            except OSError:
                cut += 1
            conns.append(s)
        time.sleep(1)
        print(json.dumps({'scenario': scenario, 'idle_hwm_mib': base, 'peak_hwm_mib': hwm(wpid), 'conns_cut': cut}))
finally:
    for p in reversed(procs):
        p.send_signal(signal.SIGTERM)
    for p in reversed(procs):
        try: p.wait(10)
        except subprocess.TimeoutExpired: p.kill()
