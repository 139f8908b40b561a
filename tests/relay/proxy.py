# SPDX-License-Identifier: MIT
"""A fault-injecting TCP proxy for the relay tests (this kernel has no
tc netem): delay and jitter, a bandwidth throttle, one stall, and cuts
of the connection every so many bytes, in the sender -> relay
direction; the answers come back with the delay only."""
import asyncio
import random
import threading


class FaultProxy:
    def __init__(self, target_port, delay_ms=0.0, jitter_ms=0.0, rate=0,
                 stall_after=0, stall_s=0.0, cut_every=0, max_cuts=0, seed=1):
        self.target_port = target_port
        self.delay = delay_ms / 1000.0
        self.jitter = jitter_ms / 1000.0
        self.rate = rate                # bytes/s, 0: no throttle
        self.stall_after = stall_after  # bytes forwarded in all, then one stall
        self.stall_s = stall_s
        self.cut_every = cut_every      # bytes per connection, 0: never
        self.max_cuts = max_cuts
        self.rng = random.Random(seed)
        self.forwarded = 0
        self.cuts = 0
        self.stalls = 0
        self.connections = 0
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        self.ready.wait(10)

    def _run(self):
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._client, "127.0.0.1", 0))
        self.port = self.server.sockets[0].getsockname()[1]
        self.ready.set()
        self.loop.run_forever()

    async def _client(self, cr, cw):
        self.connections += 1
        try:
            ur, uw = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            cw.close()
            return
        up = asyncio.ensure_future(self._pump(cr, uw, True))
        down = asyncio.ensure_future(self._pump(ur, cw, False))
        await asyncio.wait([up, down], return_when=asyncio.FIRST_COMPLETED)
        for t in (up, down):
            t.cancel()
        for w in (uw, cw):
            try:
                w.transport.abort()
            except Exception:
                pass

    async def _pump(self, r, w, upstream):
        mine = 0
        while True:
            data = await r.read(16384)
            if not data:
                return
            d = self.delay + (self.rng.uniform(0, self.jitter) if self.jitter else 0)
            if d:
                await asyncio.sleep(d)
            if upstream:
                if self.rate:
                    await asyncio.sleep(len(data) / self.rate)
                if self.stall_after and not self.stalls and self.forwarded >= self.stall_after:
                    self.stalls += 1
                    await asyncio.sleep(self.stall_s)
                if self.cut_every and self.cuts < self.max_cuts and mine + len(data) > self.cut_every:
                    # forward part of it: the cut falls inside a frame
                    part = self.cut_every - mine
                    w.write(data[:part])
                    await w.drain()
                    self.forwarded += part
                    self.cuts += 1
                    return
                mine += len(data)
                self.forwarded += len(data)
            w.write(data)
            await w.drain()

    def close(self):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
