/*
 * The node's interface for the cluster network: the one that owns the
 * address gantlet listens on (GLOO_SOCKET_IFNAME and NCCL_SOCKET_IFNAME of
 * its tasks name it). A wildcard or host-name listen address names no
 * interface.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "agent/agent_int.h"

/* The address part of "ADDR:PORT" or "[V6]:PORT" into buf. */
static void listen_host(const char *listen, char *buf, size_t len)
{
    const char *colon = strrchr(listen, ':');
    size_t n = colon ? (size_t)(colon - listen) : strlen(listen);
    if (n >= 2 && listen[0] == '[' && listen[n - 1] == ']') {
        listen++;
        n -= 2;
    }
    snprintf(buf, len, "%.*s", (int)n, listen);
}

int gt_netif_of_listen(const char *listen, char *ifname, size_t len, struct gt_err *err)
{
    char host[INET6_ADDRSTRLEN + 2];
    struct in_addr v4;
    struct in6_addr v6;
    listen_host(listen, host, sizeof(host));
    int family = inet_pton(AF_INET, host, &v4) == 1    ? AF_INET
                 : inet_pton(AF_INET6, host, &v6) == 1 ? AF_INET6
                                                       : AF_UNSPEC;
    if (family == AF_UNSPEC) {
        return gt_err_set(err, GT_EINVAL, "listen address %s is not an IP address", host);
    }
    if ((family == AF_INET && v4.s_addr == htonl(INADDR_ANY)) ||
        (family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&v6))) {
        return gt_err_set(err, GT_EINVAL, "listen address %s is a wildcard", host);
    }
    struct ifaddrs *all;
    if (getifaddrs(&all) < 0) {
        return gt_err_set(err, GT_EINTERNAL, "getifaddrs failed");
    }
    bool found = false;
    for (struct ifaddrs *a = all; a && !found; a = a->ifa_next) {
        if (!a->ifa_addr || a->ifa_addr->sa_family != family) {
            continue;
        }
        found = family == AF_INET
                    ? ((struct sockaddr_in *)(void *)a->ifa_addr)->sin_addr.s_addr == v4.s_addr
                    : !memcmp(&((struct sockaddr_in6 *)(void *)a->ifa_addr)->sin6_addr, &v6, 16);
        if (found) {
            snprintf(ifname, len, "%s", a->ifa_name);
        }
    }
    freeifaddrs(all);
    return found ? 0 : gt_err_set(err, GT_ENOTFOUND, "no interface has the address %s", host);
}
