/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The two verbs flavours. See verbs_flavour.h for what each field means and
 * the README's device table (siw: no RNR, local send completions, READ sink
 * written remotely, READ permission not checked by siw in Linux 6.1).
 */
#include "verbs.h"
#include "verbs_flavour.h"

const struct rmca_verbs_flavour rmca_verbs_flavour_ib = {
	.name = "ib",
	.credits = true,
	.credit_imm = true,
	.remote_completion = true,
};

const struct rmca_verbs_flavour rmca_verbs_flavour_iwarp = {
	.name = "iwarp",
	.credits = true,
	.confirm_sends = true,
	.ack_header = true,
	.read_sink_remote_write = true,
	.read_key_bit = true,
	.hello_read = true,
	.tcp_ports = true,
};

const struct rmca_verbs_flavour *
rmca_verbs_flavour_of(enum ibv_transport_type tt)
{
	switch (tt) {
	case IBV_TRANSPORT_IB:
		return &rmca_verbs_flavour_ib;
	case IBV_TRANSPORT_IWARP:
		return &rmca_verbs_flavour_iwarp;
	default:
		return NULL;
	}
}
