"""Minimal QMP client (stdlib only)."""
import json
import socket
import time


class QMPError(Exception):
    pass


class QMP:
    def __init__(self, path, timeout=10.0):
        deadline = time.time() + timeout
        while True:
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(path)
                break
            except OSError:
                s.close()
                if time.time() > deadline:
                    raise QMPError('cannot connect to QMP socket %s' % path)
                time.sleep(0.05)
        s.settimeout(60)
        self.sock = s
        self.buf = b''
        self.events = []
        greeting = self._recv()
        if 'QMP' not in greeting:
            raise QMPError('bad QMP greeting: %r' % greeting)
        self.execute('qmp_capabilities')

    def _recv(self):
        while b'\n' not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise QMPError('QMP connection closed')
            self.buf += data
        line, self.buf = self.buf.split(b'\n', 1)
        return json.loads(line)

    def cmd(self, name, **args):
        """Execute; return the full response dict ({'return':..} or {'error':..})."""
        msg = {'execute': name}
        if args:
            msg['arguments'] = args
        self.sock.sendall(json.dumps(msg).encode() + b'\n')
        while True:
            r = self._recv()
            if 'event' in r:
                self.events.append(r)
                continue
            return r

    def execute(self, name, **args):
        r = self.cmd(name, **args)
        if 'error' in r:
            raise QMPError('%s: %s' % (name, r['error'].get('desc', r['error'])))
        return r.get('return')

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
