// The XDP program bulwark attaches to an interface for its AF_XDP path.
//
// It hands the userspace path exactly the frames it can answer: an IPv4
// (without options, not a fragment) or IPv6 (no extension headers) UDP
// datagram whose destination port is the one in BULWARK_PORT, arriving on a
// queue whose AF_XDP socket is in BULWARK_XSKS. Everything else, and every
// frame of a queue without a socket, goes on to the kernel untouched
// (XDP_PASS), so TCP, ARP, ICMP, fragments and other ports work as before.
//
// Built with scripts/build-xdp-filter.sh (clang -target bpf); the object,
// filter.bpf.o, is committed beside this file and embedded in the binary, so
// building bulwark needs no BPF toolchain. A test rebuilds it and compares.
//
// SPDX-License-Identifier: MIT OR Apache-2.0

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

// Queue index -> AF_XDP socket.
struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u32);
} BULWARK_XSKS SEC(".maps");

// Entry 0: the DNS port, in host order (0 until userspace sets it, and
// nothing is redirected before then).
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} BULWARK_PORT SEC(".maps");

// IPv4 flags and fragment offset, less DF: set in any fragment.
#define IP_MF_OR_OFFSET 0x3fff

SEC("xdp")
int bulwark_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct udphdr *udp;

	if ((void *)(eth + 1) > end)
		return XDP_PASS;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > end)
			return XDP_PASS;
		if (ip->ihl != 5 || ip->protocol != IPPROTO_UDP)
			return XDP_PASS;
		if (ip->frag_off & bpf_htons(IP_MF_OR_OFFSET))
			return XDP_PASS;
		udp = (void *)(ip + 1);
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > end)
			return XDP_PASS;
		if (ip6->nexthdr != IPPROTO_UDP)
			return XDP_PASS;
		udp = (void *)(ip6 + 1);
	} else {
		return XDP_PASS;
	}
	if ((void *)(udp + 1) > end)
		return XDP_PASS;

	__u32 key = 0;
	__u32 *port = bpf_map_lookup_elem(&BULWARK_PORT, &key);
	if (!port || *port == 0 || udp->dest != bpf_htons((__u16)*port))
		return XDP_PASS;
	// No socket on this queue: the lower bits of the flags are the action.
	return bpf_redirect_map(&BULWARK_XSKS, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "Dual MIT/GPL";
