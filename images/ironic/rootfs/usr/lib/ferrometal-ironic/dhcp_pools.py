"""Refuses DHCP pools that no machine of the provisioning network could get an address from.

    python3 dhcp_pools.py DHCP_RANGE ADDRESS[/PREFIX]...

DHCP_RANGE is the container's variable: pools separated by `;`, each
`[set:TAG,]begin,end[,prefix length or netmask][,lease time]` (a bare number up to 32 after an
IPv4 pool is its prefix length, as the operator writes it and rundnsmasq reads it). The
addresses are the provisioning address and those of the provisioning interface.

dnsmasq hands out addresses from a pool on an interface only when the pool lies on one of that
interface's networks (by the pool's own prefix when it gives one, else by the interface's). A
pool elsewhere is accepted at start and then never answers: machines wait for an address that
never comes. Only untagged pools, the provisioning network's own, are checked: a tagged pool
(`extraRanges`) serves networks behind a DHCP relay, which share no network with this one.

Exits 0 when every untagged pool lies on a network of the addresses, 1 saying which does not,
2 on a usage error. A pool or address it cannot read is left to dnsmasq to judge.
"""

import ipaddress
import sys


def pool_bounds(pool):
    """The untagged pool's first address and, when it gives one, its network; else None."""
    fields = pool.split(",")
    if fields[0].startswith(("set:", "tag:")):
        return None
    try:
        begin = ipaddress.ip_address(fields[0])
    except ValueError:
        return None
    if len(fields) < 3:
        return begin, None
    third = fields[2]
    if begin.version == 4 and not (third.isdigit() and int(third) <= 32):
        # A netmask, or a lease time (then the interface's network decides).
        try:
            ipaddress.ip_address(third)
        except ValueError:
            return begin, None
    try:
        return begin, ipaddress.ip_network(f"{begin}/{third}", strict=False)
    except ValueError:
        return begin, None


def refused(pools, addresses):
    """The untagged pools on no network of `addresses` (ip_interface values)."""
    # An address given without a prefix says nothing of its network: it counts only for pools
    # that carry their own.
    with_networks = [a for a in addresses if a.network.prefixlen < a.max_prefixlen]
    out = []
    for pool in pools:
        bounds = pool_bounds(pool)
        if bounds is None:
            continue
        begin, network = bounds
        if network is not None:
            if not any(a.ip in network for a in addresses):
                out.append(pool)
        elif with_networks and not any(begin in a.network for a in with_networks):
            out.append(pool)
    return out


def main(argv):
    if len(argv) < 3:
        print("usage: dhcp_pools.py DHCP_RANGE ADDRESS[/PREFIX]...", file=sys.stderr)
        return 2
    pools = [p.strip() for p in argv[1].split(";") if p.strip()]
    addresses = []
    for text in argv[2:]:
        try:
            addresses.append(ipaddress.ip_interface(text))
        except ValueError:
            continue
    if not addresses:
        return 0
    wrong = refused(pools, addresses)
    for pool in wrong:
        print(
            f"DHCP range {pool} is not on the provisioning network "
            f"({', '.join(argv[2:])}): no machine there could get an address from it",
            file=sys.stderr,
        )
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
