"""What a reader types, read as a number or as a list of node names.

A number may be written as a person writes it: ``0.42``, ``-.5``, ``1/3`` or ``1 / 3``,
``2e-3``, ``−0.5`` with a true minus sign, ``(−1.5)`` in brackets as the hints write a
factor, or ``0,5`` with a decimal comma; ``1,000`` could be a thousand or one, so it is
refused with a message that says so. A list of names is separated by commas, semicolons,
spaces or arrows; a list of numbers by semicolons, by commas followed by a space, by
spaces, or by bare commas, in that order of precedence, so that ``0,5; 1,5`` and
``0,5 1,5`` read as decimal commas. A number is right within :data:`ABSOLUTE` (0.01) of the
answer, or :data:`RELATIVE` (0.5 %) of it when that is more; the answer box says so in the words
of :data:`TOLERANCE`, made from the same two numbers. A count (a whole number of flops or of steps)
is right only when it is exact (:func:`exact`): there, one off is a mistake, not a rounding.
"""

import re

__all__ = [
    "ABSOLUTE",
    "RELATIVE",
    "TOLERANCE",
    "ReadingError",
    "close",
    "exact",
    "read_names",
    "read_number",
    "read_numbers",
]

ABSOLUTE = 0.01  # a number is right this close to the answer,
RELATIVE = 0.005  # or this share of the answer, when that is more
#: The tolerance in words, as the answer box states it: from the numbers :func:`close` uses, so it cannot drift.
TOLERANCE = (
    f"within {ABSOLUTE:g} of the answer, or {RELATIVE * 100:g} % of it when the answer is beyond "
    f"\u00b1{ABSOLUTE / RELATIVE:g}"
)

_DECIMAL = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?"
_NUMBER = re.compile(rf"^({_DECIMAL})(?:/({_DECIMAL}))?$", re.IGNORECASE)
_SEPARATORS = re.compile(r"(?:\s*(?:[,;]|->|\u2192)\s*)|\s+")


class ReadingError(ValueError):
    """What a reader typed is not a number (or not a list of names); the message says why."""


def _clean(text):
    return str(text).strip().replace("\u2212", "-").replace("\u2013", "-")


def read_number(text):
    """The number a reader typed; ReadingError when it is not one."""
    cleaned = _clean(text).replace(" ", "")
    if re.fullmatch(r"\([^()]*\)", cleaned):
        cleaned = cleaned[1:-1]  # a factor in brackets, as the hints write (−1.5)
    if re.fullmatch(r"[-+]?\d{1,3},\d{3}", cleaned):
        whole, dotted = cleaned.replace(",", ""), cleaned.replace(",", ".")
        raise ReadingError(f"{text.strip()!r} could be {whole} or {dotted}: write the one you mean without the comma")
    if re.fullmatch(r"[-+]?\d+,\d+", cleaned):
        cleaned = cleaned.replace(",", ".")  # a decimal comma
    match = _NUMBER.match(cleaned)
    if not match:
        raise ReadingError(f"{text.strip()!r} is not a number: write it as 0.25, -1.5, 1/3 or 2e-3")
    value = float(match[1])
    if match[2] is not None:
        divisor = float(match[2])
        if divisor == 0:
            raise ReadingError(f"{text.strip()!r} divides by zero")
        value /= divisor
    return value


def read_numbers(text, count):
    """``count`` numbers, separated by semicolons, commas and spaces (see the module's docstring)."""
    cleaned = _clean(text).strip()
    if re.fullmatch(r"\[.*\]|\(.*\)", cleaned) and not re.fullmatch(r"\([^(),;]*\)", cleaned):
        cleaned = cleaned[1:-1]  # a list in brackets, as the page writes one: [0.5, -1]
    cleaned = re.sub(r"\s*/\s*", "/", cleaned)  # 1 / 3 is one number
    if ";" in cleaned:
        separator = r"\s*;\s*"
    elif re.search(r",\s", cleaned):
        separator = r",\s+|\s+"
    elif re.search(r"\s", cleaned.strip()):
        separator = r"\s+"
    else:
        separator = ","
    parts = [part for part in re.split(separator, cleaned.strip()) if part]
    if len(parts) != count:
        raise ReadingError(f"give {count} numbers, separated by commas; you gave {len(parts)}")
    return [read_number(part) for part in parts]


def read_names(text, known):
    """Node names, in the order typed; ``l`` counts as ``L``. ReadingError names an unknown one."""
    names = []
    for part in _SEPARATORS.split(_clean(text)):
        if not part:
            continue
        name = "L" if part == "l" else part
        if name not in known:
            raise ReadingError(f"{part!r} is not a node of this graph (its nodes: {', '.join(sorted(known))})")
        names.append(name)
    if not names:
        raise ReadingError("type the nodes' names, separated by commas")
    return names


def close(guess, answer):
    """Whether ``guess`` is right for ``answer``, within :data:`TOLERANCE`."""
    # The bound itself is right, as the answer box says "within": its floating-point rounding aside.
    return abs(guess - answer) <= max(ABSOLUTE, RELATIVE * abs(answer)) * (1 + 1e-9)


def exact(guess, answer):
    """Whether ``guess`` is the count ``answer`` itself (a whole number: one off is a mistake)."""
    return abs(guess - answer) < 1e-9
