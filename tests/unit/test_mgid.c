/* SPDX-License-Identifier: BSD-3-Clause */
/* MGID derivation, decoding, text forms and per-job Q_Keys. */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "common/mgid.h"
#include "tests/tap.h"

int main(void)
{
	uint8_t m[16], m2[16];
	char s[IBMC_MGID_STRLEN];
	uint32_t job;
	uint16_t idx;

	tap_plan(22);

	ibmc__mgid_derive(42, 0, 0xffff, m);
	ibmc__mgid_format(m, s);
	tap_is_str(s, "ff12:1bca:ffff:0000:0000:002a:0000:0000",
		   "job 42 index 0 matches the protocol example");

	ibmc__mgid_derive(0xfffffffdU, 1023, 0x8001, m);
	ibmc__mgid_format(m, s);
	tap_is_str(s, "ff12:1bca:8001:0000:ffff:fffd:0000:03ff",
		   "largest job, index 1023, limited P_Key");
	tap_is_int(strlen(s), IBMC_MGID_STRLEN - 1, "full form is 39 chars");
	tap_is_int(ibmc__mgid_decode(m, &job, &idx), 0, "decode ours");
	tap_is_int(job, 0xfffffffdU, "... job");
	tap_is_int(idx, 1023, "... index");

	tap_is_int(ibmc__mgid_parse(s, m2), 0, "parse full form");
	tap_ok(!memcmp(m, m2, 16), "... same bytes");
	tap_is_int(ibmc__mgid_parse("ff12:1bca:ffff::2a:0:0", m2), 0,
		   "parse compressed form");
	ibmc__mgid_derive(42, 0, 0xffff, m);
	tap_ok(!memcmp(m, m2, 16), "... equals derived job 42");
	tap_is_int(ibmc__mgid_parse("ff12::1::2", m2), -EINVAL,
		   "two :: refused");
	tap_is_int(ibmc__mgid_parse("not an mgid", m2), -EINVAL,
		   "junk refused");

	/* Not ours: IPoIB broadcast group and a wrong scope. */
	ibmc__mgid_parse("ff12:401b:ffff::ffff:ffff", m2);
	tap_is_int(ibmc__mgid_decode(m2, &job, &idx), -EINVAL,
		   "IPoIB MGID is not ours");
	ibmc__mgid_derive(7, 3, 0xffff, m);
	m[1] = 0x15;
	tap_is_int(ibmc__mgid_decode(m, &job, &idx), -EINVAL,
		   "other scope is not ours");
	ibmc__mgid_derive(7, 3, 0xffff, m);
	m[13] = 1;
	tap_is_int(ibmc__mgid_decode(m, NULL, NULL), -EINVAL,
		   "non-zero reserved bytes are not ours");

	/* Groups a job makes itself: never one of the plugin's, apart by
	 * job, nonce and serial. */
	ibmc__mgid_derive_own(42, 0x3681, 0x03ff126d, 0xffff, m);
	ibmc__mgid_format(m, s);
	tap_is_str(s, "ff12:1bcb:ffff:0000:002a:3681:03ff:126d",
		   "own MGID layout");
	tap_is_int(ibmc__mgid_decode(m, NULL, NULL), -EINVAL,
		   "an own MGID is not the plugin's");
	ibmc__mgid_derive_own(42, 0x3682, 0x03ff126d, 0xffff, m2);
	tap_ok(memcmp(m, m2, 16), "another nonce, another MGID");
	ibmc__mgid_derive_own(43, 0x3681, 0x03ff126d, 0xffff, m2);
	tap_ok(memcmp(m, m2, 16), "another job, another MGID");

	tap_is_int(ibmc__qkey_for_job(42), 0x1bca002a, "qkey of job 42");
	tap_is_int(ibmc__qkey_for_job(0x12345678), 0x1bca5678,
		   "qkey keeps the low 16 bits");
	tap_ok(!(ibmc__qkey_for_job(0xffffffffU) & 0x80000000U),
	       "qkey never controlled");
	return tap_done();
}
