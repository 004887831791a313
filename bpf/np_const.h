/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* np_const.h: the UAPI constants the programs compare against (vmlinux.h
 * has types and enums, not these macros). */
#ifndef NP_CONST_H
#define NP_CONST_H

#define AF_INET 2
#define AF_INET6 10
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD

#endif
