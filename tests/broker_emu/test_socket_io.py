"""broker_emu.socket_io: the broker's reads and writes on plain TCP bypass trio's extra
scheduler pass, and still deliver every byte in order, end and fail as trio's streams do."""

import socket
import struct

import pytest
import trio
import trio.testing

from broker_emu import socket_io


async def _pair() -> tuple[trio.SocketStream, trio.SocketStream]:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    client = await trio.open_tcp_stream("127.0.0.1", port)
    server = await listeners[0].accept()
    await listeners[0].aclose()
    return client, server


async def test_a_write_larger_than_the_socket_takes_arrives_whole_and_in_order():
    client, server = await _pair()
    data = bytes(range(256)) * (32 << 10)   # 8 MB: far more than the kernel takes at once
    got = bytearray()

    async def read_slowly():
        while len(got) < len(data):
            chunk = await socket_io.receive_some(client, 1 << 16)
            assert chunk
            got.extend(chunk)
            await trio.sleep(0.001)   # a slow reader: the writer meets a full socket

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read_slowly)
        await socket_io.send_all(server, data)
    assert got == data
    await client.aclose()
    await server.aclose()


async def test_the_end_of_the_stream_reads_empty_and_a_reset_fails_as_trio_fails():
    client, server = await _pair()
    await client.send_all(b"last")
    await client.aclose()
    assert await socket_io.receive_some(server, 100) == b"last"
    assert await socket_io.receive_some(server, 100) == b""
    await server.aclose()

    client, server = await _pair()
    client.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    await client.aclose()   # RST instead of FIN
    await trio.sleep(0.05)
    with pytest.raises(trio.BrokenResourceError):
        for _ in range(3):   # the first write may still be taken before the reset is seen
            await socket_io.send_all(server, b"x" * 1000)
            await trio.sleep(0.05)
    await server.aclose()


async def test_a_closed_stream_and_other_streams_keep_trios_behaviour():
    client, server = await _pair()
    await server.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await socket_io.send_all(server, b"x")
    with pytest.raises(trio.ClosedResourceError):
        await socket_io.receive_some(server, 10)
    await client.aclose()
    a, b = trio.testing.memory_stream_pair()
    await socket_io.send_all(a, b"in memory")
    assert await socket_io.receive_some(b, 100) == b"in memory"


async def test_a_whole_read_is_taken_only_when_every_byte_has_arrived():
    a, b = socket.socketpair()
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(b))
    a.sendall(b"0123456789")
    assert socket_io.receive_whole(stream, 11) is None       # not all there: nothing taken
    assert socket_io.receive_whole(stream, 10) == b"0123456789"
    assert socket_io.receive_whole(stream, 1) is None        # nothing there
    a.sendall(b"abc")
    assert socket_io.receive_whole(stream, 2) == b"ab"       # no more than asked
    assert await socket_io.receive_some(stream, 10) == b"c"
    a.close()
    await stream.aclose()
    assert socket_io.receive_whole(stream, 1) is None        # closed: the next receive says so
    x, _ = trio.testing.memory_stream_pair()
    assert socket_io.receive_whole(x, 1) is None             # not a socket: receive as before


async def test_a_large_frame_after_a_large_frame_is_received_whole_when_it_is_all_there():
    """After a large frame the reader reads the next size prefix alone; a frame that has then
    arrived whole is read in one go into a ``bytes`` of its size (not zeroed first, not copied),
    and stored as that object."""
    from broker_emu.runtime import open_cluster
    from broker_emu.server import Connection
    from client.protocol.codec import encode_request
    from client.protocol.records import decode_batch
    from tests.broker_emu.wire import WireClient, fetch_body, produce_body

    async with open_cluster(1, topics=[("t", 1, 1)]) as cluster:
        broker = next(iter(cluster.brokers.values()))
        a, b = socket.socketpair()   # a Unix socket: the kernel holds a whole frame, unread, at once
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
        cluster.tasks.start_soon(Connection(cluster, broker, trio.SocketStream(trio.socket.from_stdlib_socket(b)), "unix:test").run)
        w = WireClient(trio.SocketStream(trio.socket.from_stdlib_socket(a)))
        frames = [encode_request(0, 9, corr, "test", produce_body("t", 0, [bytes([corr]) * 10_000] * 30, acks=1))
                  for corr in (1, 2)]   # about 300 KB each: large frames
        w.sent, w.next_corr = {1: (0, 9), 2: (0, 9)}, 3
        a.send(frames[0][:32 << 10])
        await trio.testing.wait_all_tasks_blocked()   # the broker holds a buffer for the rest (in place)
        await w.stream.send_all(frames[0][32 << 10:])
        assert (await w.recv())[1]["responses"][0]["partition_responses"][0]["error_code"] == 0
        assert a.send(frames[1]) == len(frames[1]), "the kernel did not take the frame at once"
        assert (await w.recv())[1]["responses"][0]["partition_responses"][0]["error_code"] == 0
        first, second = (batch.raw for batch in cluster.partition("t", 0).log.batches)
        assert type(first) is memoryview and type(first.obj) is bytearray            # in place
        assert type(second) is memoryview and type(second.obj) is bytes and len(second.obj) == len(frames[1]) - 4
        fetched = await w.call(1, 12, fetch_body("t", 0, 0))
        _, records = decode_batch(fetched.responses[0].partitions[0].records)
        assert [r.value for r in records] == [b"\x01" * 10_000] * 30
        await w.stream.aclose()


async def test_a_megabyte_produce_over_tcp_is_received_in_place_stored_without_a_copy_and_read_back():
    from broker_emu.runtime import open_cluster
    from client.protocol.records import decode_batch
    from tests.broker_emu.wire import WireClient, fetch_body, produce_body

    async with open_cluster(1, topics=[("t", 1, 1)]) as cluster:
        broker = next(iter(cluster.brokers.values()))
        w = WireClient(await trio.open_tcp_stream("127.0.0.1", broker.port))
        values = [bytes([i]) * 10_000 for i in range(100)]   # one batch of about 1 MB
        answer = await w.call(0, 9, produce_body("t", 0, values, acks=1))
        assert answer.responses[0].partition_responses[0].error_code == 0
        stored = cluster.partition("t", 0).log.batches[0].raw
        # the frame's own buffer (FrameSplitter.room), kept as a read-only view, not copied again
        assert type(stored) is memoryview and stored.readonly and type(stored.obj) is bytearray
        fetched = await w.call(1, 12, fetch_body("t", 0, 0))
        _, records = decode_batch(fetched.responses[0].partitions[0].records)
        assert [r.value for r in records] == values
        await w.stream.aclose()
