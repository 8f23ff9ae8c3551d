"""SillyTavern's string hash and seeded random generator, bit for bit.

`string_hash` is SillyTavern's `getStringHash` (a 53-bit cyrb53 variant over UTF-16 code
units); it seeds `{{pick}}` and names world info entries for their timers.
`SeededRandom` is David Bau's `seedrandom` ARC4 generator as SillyTavern ships it, so
that a `{{pick}}` taken from a SillyTavern chat draws the same item here
(algo-chat-ops.md §8).
"""

from __future__ import annotations

_MASK32 = 0xFFFFFFFF


def _utf16_units(text: str) -> list[int]:
    data = text.encode("utf-16-le", "surrogatepass")
    return [data[i] | (data[i + 1] << 8) for i in range(0, len(data), 2)]


def _imul(a: int, b: int) -> int:
    return (a * b) & _MASK32


def string_hash(text: str, seed: int = 0) -> int:
    """SillyTavern's `getStringHash`: cyrb53 over UTF-16 code units, below 2**53."""
    h1 = (0xDEADBEEF ^ seed) & _MASK32
    h2 = (0x41C6CE57 ^ seed) & _MASK32
    for unit in _utf16_units(text):
        h1 = _imul(h1 ^ unit, 2654435761)
        h2 = _imul(h2 ^ unit, 1597334677)
    h1 = _imul(h1 ^ (h1 >> 16), 2246822507) ^ _imul(h2 ^ (h2 >> 13), 3266489909)
    h2 = _imul(h2 ^ (h2 >> 16), 2246822507) ^ _imul(h1 ^ (h1 >> 13), 3266489909)
    return 4294967296 * (2097151 & h2) + h1


class SeededRandom:
    """`seedrandom(seed)` with its ARC4 core: the same seed gives the same draws as in JS.

    A number seed is used as its decimal text plus a NUL, as `seedrandom` does.
    """

    __slots__ = ("_i", "_j", "_s")

    def __init__(self, seed: int | str) -> None:
        text = seed if isinstance(seed, str) else f"{seed}\0"
        key: list[int] = []
        smear = 0
        for position, unit in enumerate(_utf16_units(text)):
            slot = position & 255
            previous = key[slot] if slot < len(key) else 0
            smear ^= previous * 19
            value = (smear + unit) & 255
            if slot < len(key):
                key[slot] = value
            else:
                key.append(value)
        if not key:
            key = [0]
        state = list(range(256))
        j = 0
        for i in range(256):
            t = state[i]
            j = (j + key[i % len(key)] + t) & 255
            state[i] = state[j]
            state[j] = t
        self._s = state
        self._i = 0
        self._j = 0
        self._bytes(256)  # seedrandom discards the first 256 bytes (RC4-drop[256])

    def _bytes(self, count: int) -> int:
        s, i, j = self._s, self._i, self._j
        result = 0
        for _ in range(count):
            i = (i + 1) & 255
            t = s[i]
            j = (j + t) & 255
            s[i] = s[j]
            s[j] = t
            result = result * 256 + s[(s[i] + s[j]) & 255]
        self._i, self._j = i, j
        return result

    def random(self) -> float:
        """A float in [0, 1) with 53 bits of randomness, as `seedrandom`'s `prng()`."""
        n = float(self._bytes(6))
        d = 281474976710656.0  # 2**48
        x = 0
        while n < 4503599627370496.0:  # 2**52
            n = (n + x) * 256
            d *= 256
            x = self._bytes(1)
        while n >= 9007199254740992.0:  # 2**53
            n /= 2
            d /= 2
            x >>= 1
        return (n + x) / d
