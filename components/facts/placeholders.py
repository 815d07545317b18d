"""Documentation values (example AWS accounts, documentation IP ranges, e-mail and host domains) that must not reach AWS.

Pure.

The shipped stack files use them on purpose, as examples; a real deploy must replace every one.
The synth's "replace before a real deploy" block and the policy pack's `no-documentation-placeholders`
rule both read this module, so the list lives here only.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

# Account IDs AWS uses in its documentation examples.
EXAMPLE_ACCOUNT_IDS = frozenset({"111122223333", "444455556666", "777788889999", "123456789012", "012345678901"})
# RFC 5737 (IPv4) and RFC 3849 (IPv6) documentation ranges.
DOCUMENTATION_NETWORKS = tuple(
    ipaddress.ip_network(cidr) for cidr in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")
)

# RFC 2606 reserves example.com/.net/.org (and their subdomains) and the TLDs .example, .test and .invalid:
# an alarm e-mail sent there reaches nobody.
_DOCUMENTATION_EMAIL = re.compile(
    r"[\w.+%-]+@(?:[\w-]+\.)*(?:example\.(?:com|net|org)|[\w-]+\.(?:example|test|invalid))(?![\w.-])",
    re.IGNORECASE,
)

# The same RFC 2606 names as a host (a hub's hostname, an OAuth endpoint URL): nobody can own them, so no
# certificate, DNS record or OAuth callback there can ever work.
_DOCUMENTATION_HOST = re.compile(
    r"(?<![\w.@-])(?:[\w-]+\.)*(?:example\.(?:com|net|org)|[\w-]+\.(?:example|test|invalid))(?![\w.-])",
    re.IGNORECASE,
)

_ACCOUNT_ID = re.compile(r"(?<![0-9])[0-9]{12}(?![0-9])")
# Candidate addresses or CIDRs inside a longer string (an ARN, a URL, a JSON policy document).
_ADDRESS = re.compile(r"[0-9A-Fa-f.:]*[.:][0-9A-Fa-f.:]*(?:/[0-9]{1,3})?")


def _in_documentation_range(text: str) -> bool:
    try:
        network = ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return any(network.version == doc.version and network.subnet_of(doc) for doc in DOCUMENTATION_NETWORKS)  # type: ignore[arg-type]


def placeholders_in(text: str) -> list[str]:
    """The documentation values inside one string (an example account ID, a documentation address/CIDR, an
    e-mail address or a host name in an RFC 2606 domain)."""
    found = [match for match in _ACCOUNT_ID.findall(text) if match in EXAMPLE_ACCOUNT_IDS]
    found += _DOCUMENTATION_EMAIL.findall(text)
    found += _DOCUMENTATION_HOST.findall(_DOCUMENTATION_EMAIL.sub(" ", text))
    found += [match for match in _ADDRESS.findall(text) if _in_documentation_range(match)]
    return list(dict.fromkeys(found))


Unknown = tuple[type[Exception], ...]


def _items(value: Mapping[Any, Any] | Sequence[Any], skip: Unknown) -> Iterator[tuple[Any, Any]]:
    """Key/index and item pairs; an item that raises one of `skip` (not known yet) is left out."""
    keys = list(value) if isinstance(value, Mapping) else range(len(value))
    for key in keys:
        try:
            yield key, value[key]
        except skip:
            continue


def _leaves(value: Any, path: str, skip: Unknown) -> Iterator[tuple[str, str]]:
    # Mapping / Sequence, not dict / list: the policy SDK hands rules proxies of both.
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in _items(value, skip):
            if not re.fullmatch(r"[A-Za-z_][\w-]*", str(key)):
                yield from _leaves(item, f'{path}["{key}"]', skip)
            else:
                yield from _leaves(item, f"{path}.{key}" if path else str(key), skip)
    elif isinstance(value, Sequence):
        for index, item in _items(value, skip):
            yield from _leaves(item, f"{path}[{index}]", skip)


def placeholder_values(value: Any, path: str = "", skip: Unknown = ()) -> list[tuple[str, str]]:
    """Every `(path, string)` under a JSON-like value that holds a documentation value.

    `skip`: exceptions that reading a not-yet-known value raises; such values are passed over
    (an unknown value is no literal from a stack file), so the rest is still checked in a preview.
    """
    return [(where, text) for where, text in _leaves(value, path, skip) if placeholders_in(text)]
