"""Reads the Perfetto protobuf traces `memtrail export --format perfetto` writes, from the wire
format itself (no protobuf library), and checks their interning as Perfetto's reader would: on
each packet sequence, the first packet clears the incremental state, a packet that uses interned
data says it needs it, and every iid it uses was defined by it or an earlier packet of the
sequence, once.

    trace = perfetto_proto.read_trace(path_or_bytes)
    trace.slices: [{"track", "name", "category", "begin", "end", "args"}], in begin order
    trace.counters: {track name: [(timestamp, value)]}
    trace.instants: [{"track", "name", "timestamp"}]
"""

import pathlib

# Field numbers, as in the writer (cli/src/perfetto_trace.cpp) and Perfetto's protos.
TRACE_PACKET = 1
PACKET_TIMESTAMP, PACKET_SEQUENCE_ID, PACKET_TRACK_EVENT = 8, 10, 11
PACKET_INTERNED_DATA, PACKET_SEQUENCE_FLAGS, PACKET_TRACK_DESCRIPTOR = 12, 13, 60
SEQ_INCREMENTAL_STATE_CLEARED, SEQ_NEEDS_INCREMENTAL_STATE = 1, 2
TRACK_UUID, TRACK_NAME, TRACK_PARENT, TRACK_COUNTER = 1, 2, 5, 8
EVENT_CATEGORY_IIDS, EVENT_ANNOTATIONS, EVENT_TYPE, EVENT_NAME_IID = 3, 4, 9, 10
EVENT_TRACK_UUID, EVENT_COUNTER_VALUE = 11, 30
EVENT_EXTRA_COUNTER_TRACKS, EVENT_EXTRA_COUNTER_VALUES = 31, 12
SLICE_BEGIN, SLICE_END, INSTANT, COUNTER = 1, 2, 3, 4
ANNOTATION_NAME_IID, ANNOTATION_STRING_IID = 1, 17
ANNOTATION_VALUES = {2: "bool", 3: "uint", 4: "int", 7: "pointer"}
# InternedData fields, by the index they fill.
INTERNED = {1: "categories", 2: "names", 3: "argument names", 29: "strings"}


class TraceError(AssertionError):
    pass


def varint(data, at):
    value = shift = 0
    while True:
        if at >= len(data):
            raise TraceError("truncated varint")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at += 1
        if byte < 0x80:
            return value, at
        shift += 7


def fields(data):
    """(number, value) of each field of a message: an int for varints, bytes for the rest."""
    at = 0
    out = []
    while at < len(data):
        key, at = varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = varint(data, at)
        elif wire == 2:
            length, at = varint(data, at)
            if at + length > len(data):
                raise TraceError("field %d runs past its message" % number)
            value, at = data[at:at + length], at + length
        elif wire == 1:
            value, at = data[at:at + 8], at + 8
        elif wire == 5:
            value, at = data[at:at + 4], at + 4
        else:
            raise TraceError("wire type %d" % wire)
        out.append((number, value))
    return out


def one(message, number, default=None):
    values = [v for n, v in fields(message) if n == number]
    if len(values) > 1:
        raise TraceError("field %d repeated" % number)
    return values[0] if values else default


class Trace:
    def __init__(self):
        self.slices = []
        self.counters = {}
        self.instants = []
        self.tracks = {}  # uuid -> {"name", "parent", "counter"}
        self.interned = {}  # (sequence, index) -> {iid: text}
        self.packets = 0


def read_interned(trace, sequence, data):
    for number, entry in fields(data):
        index = INTERNED.get(number)
        if index is None:
            raise TraceError("interned field %d is not one memtrail writes" % number)
        table = trace.interned.setdefault((sequence, index), {})
        iid, text = one(entry, 1), one(entry, 2, b"").decode()
        if iid in table:
            raise TraceError("%s iid %d defined twice" % (index, iid))
        table[iid] = text


def lookup(trace, sequence, index, iid):
    text = trace.interned.get((sequence, index), {}).get(iid)
    if text is None:
        raise TraceError("%s iid %d used before it was defined" % (index, iid))
    return text


def read_event(trace, sequence, timestamp, data, open_slices):
    kind = one(data, EVENT_TYPE)
    track = one(data, EVENT_TRACK_UUID)
    if track not in trace.tracks:
        raise TraceError("event on track %s, never described" % track)
    name_iid = one(data, EVENT_NAME_IID)
    name = lookup(trace, sequence, "names", name_iid) if name_iid else None
    if kind == COUNTER:
        extra_tracks = [v for n, v in fields(data) if n == EVENT_EXTRA_COUNTER_TRACKS]
        extra_values = [v for n, v in fields(data) if n == EVENT_EXTRA_COUNTER_VALUES]
        if len(extra_tracks) != len(extra_values):
            raise TraceError("extra counter values without their tracks")
        for counter, value in [(track, one(data, EVENT_COUNTER_VALUE))] + \
                list(zip(extra_tracks, extra_values)):
            if not trace.tracks.get(counter, {}).get("counter"):
                raise TraceError("counter value for track %s, not a counter track" % counter)
            trace.counters.setdefault(trace.tracks[counter]["name"], []).append((timestamp, value))
    elif kind == SLICE_BEGIN:
        categories = [lookup(trace, sequence, "categories", iid)
                      for n, iid in fields(data) if n == EVENT_CATEGORY_IIDS]
        args = {}
        for n, annotation in fields(data):
            if n != EVENT_ANNOTATIONS:
                continue
            key = lookup(trace, sequence, "argument names", one(annotation, ANNOTATION_NAME_IID))
            for number, value in fields(annotation):
                if number == ANNOTATION_STRING_IID:
                    args[key] = lookup(trace, sequence, "strings", value)
                elif number in ANNOTATION_VALUES:
                    args[key] = value
        slice_ = {"track": trace.tracks[track]["name"], "name": name,
                  "category": categories[0] if categories else None, "begin": timestamp,
                  "end": None, "args": args}
        open_slices.setdefault(track, []).append(slice_)
        trace.slices.append(slice_)
    elif kind == SLICE_END:
        if open_slices.get(track):
            open_slices[track].pop()["end"] = timestamp
    elif kind == INSTANT:
        trace.instants.append({"track": trace.tracks[track]["name"], "name": name,
                               "timestamp": timestamp})


def read_trace(source):
    data = source if isinstance(source, bytes) else pathlib.Path(source).read_bytes()
    trace = Trace()
    cleared = set()
    open_slices = {}
    for number, packet in fields(data):
        if number != TRACE_PACKET:
            raise TraceError("top-level field %d is not a packet" % number)
        trace.packets += 1
        sequence = one(packet, PACKET_SEQUENCE_ID)
        flags = one(packet, PACKET_SEQUENCE_FLAGS, 0)
        if flags & SEQ_INCREMENTAL_STATE_CLEARED:
            cleared.add(sequence)
        interned = one(packet, PACKET_INTERNED_DATA)
        event = one(packet, PACKET_TRACK_EVENT)
        if (interned is not None or event is not None) and \
                not flags & SEQ_NEEDS_INCREMENTAL_STATE:
            raise TraceError("packet %d uses interned data without SEQ_NEEDS_INCREMENTAL_STATE"
                             % trace.packets)
        if flags & SEQ_NEEDS_INCREMENTAL_STATE and sequence not in cleared:
            raise TraceError("packet %d needs incremental state its sequence never cleared"
                             % trace.packets)
        if interned is not None:
            read_interned(trace, sequence, interned)
        descriptor = one(packet, PACKET_TRACK_DESCRIPTOR)
        if descriptor is not None:
            trace.tracks[one(descriptor, TRACK_UUID)] = {
                "name": one(descriptor, TRACK_NAME, b"").decode(),
                "parent": one(descriptor, TRACK_PARENT),
                "counter": one(descriptor, TRACK_COUNTER) is not None}
        if event is not None:
            read_event(trace, sequence, one(packet, PACKET_TIMESTAMP), event, open_slices)
    return trace
