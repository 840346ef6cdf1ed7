"""Which redirects a feed fetch follows: the same scheme, and the same class of address.

A feed URL is set by an operator, but where it redirects is up to whoever serves it: a public
feed that redirects to ``http://169.254.169.254/…`` (a cloud's metadata service) or to
``http://10.0.0.5:6379/`` would make the worker fetch from inside the cluster and store what
came back (issue #34). So a redirect is followed only when

* its scheme is the original URL's (no https → http downgrade, nothing but http(s));
* every address its host resolves to is of the original host's class — public, private,
  loopback — and never link-local (metadata services live there, RFC 3927) or otherwise
  special (multicast, unspecified, reserved).

A public feed can therefore only redirect to public addresses. A feed an operator configured
on a private or loopback address (an internal mirror; the tests' loopback servers) may
redirect within that class. The addresses are checked before any connection to the target is
made. (The HTTP client resolves the name again when it connects; a DNS answer that changes in
between is not covered — a resolver an attacker controls can also answer for the original.)
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from enum import StrEnum

import httpx

__all__ = ["MAX_REDIRECTS", "AddressClass", "address_class", "host_class", "redirect_refusal"]

#: Redirects followed per fetch; httpx's own default is 20, browsers' ~20; a feed needs 1-2.
MAX_REDIRECTS = 5  # ours


class AddressClass(StrEnum):
    PUBLIC = "public"
    PRIVATE = "private"
    LOOPBACK = "loopback"
    LINK_LOCAL = "link-local"
    SPECIAL = "special"


def address_class(address: str) -> AddressClass:
    """The class of one IP address (``ipaddress``'s IANA special-purpose registries)."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return AddressClass.LOOPBACK
    if ip.is_link_local:
        return AddressClass.LINK_LOCAL
    if ip.is_multicast or ip.is_unspecified or ip.is_reserved:
        return AddressClass.SPECIAL
    if ip.is_private:
        return AddressClass.PRIVATE
    return AddressClass.PUBLIC if ip.is_global else AddressClass.SPECIAL


async def host_class(host: str) -> set[AddressClass]:
    """The classes of every address ``host`` (a name or an IP literal) resolves to.

    Raises:
        OSError: the name does not resolve.
    """
    try:
        return {address_class(host.strip("[]"))}
    except ValueError:
        pass
    infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return {address_class(str(info[4][0]).split("%")[0]) for info in infos}


async def redirect_refusal(origin: httpx.URL, target: httpx.URL) -> str | None:
    """Why the redirect from ``origin`` to ``target`` is not followed; ``None`` to follow it."""
    if target.scheme != origin.scheme:
        return f"it changes the scheme ({origin.scheme} to {target.scheme or 'none'})"
    if not target.host:
        return "it names no host"
    try:
        wanted = await host_class(origin.host)
        found = await host_class(target.host)
    except OSError as exc:
        return f"its host does not resolve ({exc.strerror or exc})"
    bad = sorted(c for c in found if c in (AddressClass.LINK_LOCAL, AddressClass.SPECIAL))
    if bad:
        return f"it points at a {bad[0]} address"
    if len(wanted) != 1 or found != wanted:
        return (
            f"it points at a {'/'.join(sorted(found))} address; "
            f"the feed's own host is {'/'.join(sorted(wanted))}"
        )
    return None
