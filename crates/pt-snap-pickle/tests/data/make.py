"""Writes the pickles under tests/data and the expected rendering of each.

Run from this directory with CPython 3.8+: `python3 make.py`. The outputs are committed so
the Rust tests never need Python. `render` mirrors `tests/common/mod.rs::render`.
"""
import collections
import pickle


def render(v):
    if v is None:
        return "None"
    if v is True:
        return "True"
    if v is False:
        return "False"
    if isinstance(v, int):
        if -(2**63) <= v < 2**63:
            return str(v)
        return "bigint(" + pickle.encode_long(v).hex() + ")"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        out = '"'
        for ch in v:
            if ch in '"\\':
                out += "\\" + ch
            elif ord(ch) < 0x20:
                out += "\\u%04x" % ord(ch)
            else:
                out += ch
        return out + '"'
    if isinstance(v, bytes):
        return "b(" + v.hex() + ")"
    if isinstance(v, bytearray):
        return "bytearray(" + bytes(v).hex() + ")"
    if isinstance(v, list):
        return "[" + ", ".join(render(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(render(x) for x in v) + ")"
    if isinstance(v, dict):
        return "{" + ", ".join(render(k) + ": " + render(x) for k, x in v.items()) + "}"
    if isinstance(v, frozenset):
        return "frozenset{" + ", ".join(sorted(render(x) for x in v)) + "}"
    if isinstance(v, set):
        return "set{" + ", ".join(sorted(render(x) for x in v)) + "}"
    raise TypeError(type(v))


def sample(protocol):
    shared_dict = {"filename": "a.py", "line": 3, "name": "f"}
    shared_list = [shared_dict, shared_dict]
    obj = {
        "str": "h\u00e9llo \"q\" \\ \n\t\u20ac\U0001F600",
        "empty": "",
        "ints": [0, 1, -1, 255, 256, 65535, 65536, -2**31, 2**31 - 1, 2**31, 2**63 - 1, -2**63],
        "big": [2**63, 2**64 - 1, 2**64 + 5, -(2**63) - 1, -(2**70), 10**40],
        "floats": [1.5, -0.25, 0.0, 0.001, 123456.789],
        "bools": [True, False, None],
        "tuples": [(), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4)],
        "nested": {"a": {"b": {"c": [[], [[]]]}}},
        "shared": [shared_list, shared_list, shared_dict],
        "many": list(range(2500)),
        "wide": {str(i): i for i in range(1200)},
    }
    if protocol >= 3:
        obj["bytes"] = [b"", b"\x00\xff", bytes(300)]
    if protocol >= 4:
        obj["sets"] = [set(), {1, 2, "x"}, frozenset(), frozenset({3})]
        obj["long_str"] = "x" * 70000
    if protocol >= 5:
        obj["bytearray"] = bytearray(b"\x01\x02")
    return obj


if __name__ == "__main__":
    for p in range(6):
        obj = sample(p)
        with open(f"sample_p{p}.pkl", "wb") as f:
            pickle.dump(obj, f, protocol=p)
        with open(f"sample_p{p}.expected", "w", encoding="utf-8") as f:
            f.write(render(obj) + "\n")
    with open("ordered_dict.pkl", "wb") as f:
        pickle.dump(collections.OrderedDict(), f)
    with open("ordered_dict_p0.pkl", "wb") as f:
        pickle.dump(collections.OrderedDict(), f, protocol=0)
