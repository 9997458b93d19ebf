"""The header of a memtrail snapshot, read from Python without memtrail: for the tests of
`memtrail run` (tests/run) and the GPU scripts (tests/gpu/run_ranks.sh), which check the job
identity each rank's snapshot records."""

import pathlib


def snapshot_header(path):
    """The header of a plain memtrail snapshot: "MEMTRAIL", the format version, then a msgpack
    map whose first key is "header" (docs/snapshot-format.md). Enough of msgpack to read it."""
    data = pathlib.Path(path).read_bytes()
    assert data[:8] == b"MEMTRAIL", path
    position = 9

    def take(size):
        nonlocal position
        position += size
        return data[position - size:position]

    def number(size, signed=False):
        return int.from_bytes(take(size), "big", signed=signed)

    def value():
        kind = take(1)[0]
        if kind <= 0x7f or kind >= 0xe0:
            return kind if kind <= 0x7f else kind - 0x100
        if 0x80 <= kind <= 0x8f or kind in (0xde, 0xdf):
            size = kind & 0x0f if kind <= 0x8f else number(2 if kind == 0xde else 4)
            return {value(): value() for _ in range(size)}
        if 0x90 <= kind <= 0x9f or kind in (0xdc, 0xdd):
            size = kind & 0x0f if kind <= 0x9f else number(2 if kind == 0xdc else 4)
            return [value() for _ in range(size)]
        if 0xa0 <= kind <= 0xbf or kind in (0xd9, 0xda, 0xdb):
            size = kind & 0x1f if kind <= 0xbf else number({0xd9: 1, 0xda: 2, 0xdb: 4}[kind])
            return take(size).decode()
        if kind in (0xc4, 0xc5, 0xc6):
            return take(number({0xc4: 1, 0xc5: 2, 0xc6: 4}[kind]))
        if kind in (0xc0, 0xc2, 0xc3):
            return {0xc0: None, 0xc2: False, 0xc3: True}[kind]
        if kind in (0xcc, 0xcd, 0xce, 0xcf):
            return number({0xcc: 1, 0xcd: 2, 0xce: 4, 0xcf: 8}[kind])
        if kind in (0xd0, 0xd1, 0xd2, 0xd3):
            return number({0xd0: 1, 0xd1: 2, 0xd2: 4, 0xd3: 8}[kind], signed=True)
        if kind in (0xca, 0xcb):
            return take(4 if kind == 0xca else 8)
        raise ValueError(f"{path}: msgpack type {kind:#x} at {position - 1}")

    top = take(1)[0]
    assert 0x80 <= top <= 0x8f or top in (0xde, 0xdf), path
    if top in (0xde, 0xdf):
        take(2 if top == 0xde else 4)
    assert value() == "header", path
    return value()
