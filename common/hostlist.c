/* SPDX-License-Identifier: BSD-3-Clause */
/* Slurm hostlist expressions: expansion bounded before any allocation (a
 * hostile "n[1-4000000000]" is refused at once) and compression back into
 * ranges for display. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fnv.h"
#include "common/hostlist.h"

#define NAME_MAX_LEN 63
#define NUM_MAX_DIGITS 18 /* keeps every bound well inside uint64_t */

/* One "lo" or "lo-hi" item inside brackets; width is the digits of lo, so
 * "08-10" keeps two-digit padding. */
struct range {
	uint64_t lo, hi;
	int width;
};

/* A name pattern: literal text with up to MAX_BRACKETS bracket sets. The
 * text between brackets is kept as (offset, length) into the expression. */
#define MAX_BRACKETS 8
struct pattern {
	const char *lit[MAX_BRACKETS + 1];
	size_t lit_len[MAX_BRACKETS + 1];
	struct range *ranges[MAX_BRACKETS];
	size_t nranges[MAX_BRACKETS];
	int nbrackets;
};

static bool name_char(char c)
{
	/* Anything printable except the syntax and whitespace. */
	return c > ' ' && c < 0x7f && c != ',' && c != '[' && c != ']';
}

static uint64_t sat_add(uint64_t a, uint64_t b, uint64_t cap)
{
	return (a > cap || b > cap - a) ? cap + 1 : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b, uint64_t cap)
{
	if (a && b > cap / a)
		return cap + 1;
	return a * b > cap ? cap + 1 : a * b;
}

static int parse_num(const char **p, const char *end, uint64_t *v, int *w)
{
	const char *s = *p;
	uint64_t n = 0;
	int d = 0;

	while (s < end && *s >= '0' && *s <= '9') {
		if (++d > NUM_MAX_DIGITS)
			return -EINVAL;
		n = n * 10 + (uint64_t)(*s - '0');
		s++;
	}
	if (!d)
		return -EINVAL;
	*p = s;
	*v = n;
	*w = d;
	return 0;
}

/* Parse "1-3,7,09-11" (between the brackets) into ranges if out is given,
 * always counting items and names. */
static int parse_ranges(const char *s, const char *end, struct range *out,
			size_t *nitems, uint64_t *count, uint64_t cap)
{
	uint64_t total = 0;
	size_t n = 0;

	for (;;) {
		struct range r;
		int w2, rc;

		rc = parse_num(&s, end, &r.lo, &r.width);
		if (rc)
			return rc;
		r.hi = r.lo;
		if (s < end && *s == '-') {
			s++;
			rc = parse_num(&s, end, &r.hi, &w2);
			if (rc)
				return rc;
			if (r.hi < r.lo)
				return -EINVAL;
		}
		if (out)
			out[n] = r;
		n++;
		total = sat_add(total, r.hi - r.lo + 1, cap);
		if (s == end)
			break;
		if (*s != ',')
			return -EINVAL;
		s++;
	}
	*nitems = n;
	*count = total;
	return 0;
}

static void pattern_free(struct pattern *p)
{
	int i;

	for (i = 0; i < p->nbrackets; i++)
		free(p->ranges[i]);
	memset(p, 0, sizeof(*p));
}

/* Parse one comma-separated item s..end. With alloc false only the
 * syntax is checked and the name count returned, nothing is allocated. */
static int pattern_parse(const char *s, const char *end, bool alloc,
			 struct pattern *p, uint64_t *count, uint64_t cap)
{
	uint64_t total = 1;
	int rc;

	memset(p, 0, sizeof(*p));
	if (s == end)
		return -EINVAL;
	for (;;) {
		const char *lit = s, *close;
		size_t items;
		uint64_t n;
		int b = p->nbrackets;

		while (s < end && name_char(*s))
			s++;
		p->lit[b] = lit;
		p->lit_len[b] = (size_t)(s - lit);
		if (s == end)
			break;
		if (*s != '[' || b == MAX_BRACKETS) {
			rc = -EINVAL;
			goto err;
		}
		close = memchr(s, ']', (size_t)(end - s));
		if (!close) {
			rc = -EINVAL;
			goto err;
		}
		rc = parse_ranges(s + 1, close, NULL, &items, &n, cap);
		if (rc)
			goto err;
		if (alloc) {
			p->ranges[b] = calloc(items, sizeof(struct range));
			if (!p->ranges[b]) {
				rc = -ENOMEM;
				goto err;
			}
			parse_ranges(s + 1, close, p->ranges[b], &items, &n,
				     cap);
			p->nranges[b] = items;
		}
		p->nbrackets++;
		total = sat_mul(total, n, cap);
		s = close + 1;
	}
	*count = total;
	return 0;
err:
	pattern_free(p);
	return rc;
}

/* Open-addressing set of names for duplicate removal. */
struct nameset {
	size_t *slots; /* index + 1 into names; 0 = empty */
	size_t mask;
};

/* True if name was new (and is now recorded as names[idx]). */
static bool nameset_add(struct nameset *set, char **names, size_t idx)
{
	size_t i = (size_t)ibmc__fnv1a64(IBMC__FNV64_INIT, names[idx],
					 strlen(names[idx])) & set->mask;

	while (set->slots[i]) {
		if (!strcmp(names[set->slots[i] - 1], names[idx]))
			return false;
		i = (i + 1) & set->mask;
	}
	set->slots[i] = idx + 1;
	return true;
}

static int emit(struct ibmc_hostlist *hl, struct nameset *set,
		const char *name)
{
	hl->names[hl->count] = strdup(name);
	if (!hl->names[hl->count])
		return -ENOMEM;
	if (nameset_add(set, hl->names, hl->count))
		hl->count++;
	else
		free(hl->names[hl->count]);
	return 0;
}

/* Odometer over the bracket sets of one pattern, most significant first. */
static int pattern_expand(const struct pattern *p, struct ibmc_hostlist *hl,
			  struct nameset *set)
{
	size_t ri[MAX_BRACKETS] = { 0 };
	uint64_t v[MAX_BRACKETS];
	char name[NAME_MAX_LEN + 1];
	int b, rc;

	for (b = 0; b < p->nbrackets; b++)
		v[b] = p->ranges[b][0].lo;
	for (;;) {
		size_t off = 0;

		for (b = 0; b <= p->nbrackets; b++) {
			int n;

			if (off + p->lit_len[b] > NAME_MAX_LEN)
				return -EINVAL;
			memcpy(name + off, p->lit[b], p->lit_len[b]);
			off += p->lit_len[b];
			if (b == p->nbrackets)
				break;
			n = snprintf(name + off, sizeof(name) - off, "%0*llu",
				     p->ranges[b][ri[b]].width,
				     (unsigned long long)v[b]);
			if (n < 0 || off + (size_t)n > NAME_MAX_LEN)
				return -EINVAL;
			off += (size_t)n;
		}
		name[off] = '\0';
		if (!off)
			return -EINVAL;
		rc = emit(hl, set, name);
		if (rc)
			return rc;

		/* Advance the least significant bracket, carrying left. */
		for (b = p->nbrackets - 1; b >= 0; b--) {
			const struct range *r = &p->ranges[b][ri[b]];

			if (v[b] < r->hi) {
				v[b]++;
				break;
			}
			if (ri[b] + 1 < p->nranges[b]) {
				ri[b]++;
				v[b] = p->ranges[b][ri[b]].lo;
				break;
			}
			ri[b] = 0;
			v[b] = p->ranges[b][0].lo;
		}
		if (b < 0)
			return 0;
	}
}

/* End of the item starting at s: the next comma outside brackets. */
static const char *item_end(const char *s)
{
	int depth = 0;

	for (; *s; s++) {
		if (*s == '[')
			depth++;
		else if (*s == ']')
			depth--;
		else if (*s == ',' && !depth)
			break;
	}
	return s;
}

void ibmc__hostlist_free(struct ibmc_hostlist *hl)
{
	size_t i;

	if (!hl)
		return;
	for (i = 0; i < hl->count; i++)
		free(hl->names[i]);
	free(hl->names);
	hl->names = NULL;
	hl->count = 0;
}

int ibmc__hostlist_expand(const char *expr, size_t max_names,
			  struct ibmc_hostlist *out)
{
	struct nameset set = { 0 };
	struct pattern p;
	uint64_t total = 0, cap = max_names, n;
	const char *s, *e;
	size_t slots;
	int rc;

	out->names = NULL;
	out->count = 0;
	if (!expr)
		return -EINVAL;
	/* The saturating arithmetic needs headroom above the cap. */
	if (cap > UINT32_MAX)
		cap = UINT32_MAX;

	/* Pass 1: syntax and the total, duplicates included, so the bound
	 * holds before a single name is allocated. */
	for (s = expr;; s = e + 1) {
		e = item_end(s);
		rc = pattern_parse(s, e, false, &p, &n, cap);
		if (rc)
			return rc;
		total = sat_add(total, n, cap);
		if (!*e)
			break;
	}
	if (total > cap)
		return -E2BIG;

	out->names = calloc(total ? total : 1, sizeof(char *));
	for (slots = 2; slots < total * 2; slots <<= 1)
		;
	set.slots = calloc(slots, sizeof(size_t));
	set.mask = slots - 1;
	if (!out->names || !set.slots) {
		rc = -ENOMEM;
		goto out;
	}

	/* Pass 2: expand. */
	for (s = expr;; s = e + 1) {
		e = item_end(s);
		rc = pattern_parse(s, e, true, &p, &n, cap);
		if (rc)
			goto out;
		rc = pattern_expand(&p, out, &set);
		pattern_free(&p);
		if (rc)
			goto out;
		if (!*e)
			break;
	}
	rc = 0;
out:
	free(set.slots);
	if (rc)
		ibmc__hostlist_free(out);
	return rc;
}

/* --- compression ------------------------------------------------------ */

struct split {
	const char *name;
	size_t plen;     /* prefix length; the rest are digits */
	uint64_t num;
	int ndig;        /* 0: no mergeable numeric suffix */
	size_t order;    /* first position of this prefix in the input */
	size_t pos;
};

static void split_name(const char *name, struct split *sp)
{
	size_t len = strlen(name), i = len;

	while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
		i--;
	sp->name = name;
	sp->plen = i;
	sp->ndig = 0;
	sp->num = 0;
	/* Only names with a non-empty prefix, a digit suffix and no
	 * hostlist syntax of their own can be merged into a range. */
	if (i == 0 || i == len || len - i > NUM_MAX_DIGITS ||
	    strpbrk(name, ",[]"))
		return;
	sp->ndig = (int)(len - i);
	for (; i < len; i++)
		sp->num = sp->num * 10 + (uint64_t)(name[i] - '0');
}

static bool same_prefix(const struct split *a, const struct split *b)
{
	return a->ndig && b->ndig && a->plen == b->plen &&
	       !memcmp(a->name, b->name, a->plen);
}

static int split_cmp(const void *x, const void *y)
{
	const struct split *a = x, *b = y;

	if (a->order != b->order)
		return a->order < b->order ? -1 : 1;
	if (a->num != b->num)
		return a->num < b->num ? -1 : 1;
	if (a->ndig != b->ndig)
		return a->ndig < b->ndig ? -1 : 1;
	return a->pos < b->pos ? -1 : a->pos > b->pos;
}

struct sbuf {
	char *s;
	size_t len, cap;
	bool oom;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		char *ns;

		while (b->len + n + 1 > cap)
			cap *= 2;
		ns = realloc(b->s, cap);
		if (!ns) {
			b->oom = true;
			return;
		}
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void sb_num(struct sbuf *b, uint64_t v, int width)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "%0*llu", width,
			 (unsigned long long)v);

	sb_add(b, tmp, (size_t)n);
}

/* Does number v print as the given digits when padded to width? A range
 * item "lo-hi" expands with lo's width, so only such runs may merge. */
static bool fits_width(const struct split *sp, int width)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "%0*llu", width,
			 (unsigned long long)sp->num);

	return n == sp->ndig &&
	       !memcmp(tmp, sp->name + sp->plen, (size_t)sp->ndig);
}

/* Emit one prefix's sorted names [i, j) as prefix[ranges]. */
static void emit_group(struct sbuf *b, const struct split *v, size_t i,
		       size_t j)
{
	bool first = true;

	if (j - i == 1) {
		sb_add(b, v[i].name, strlen(v[i].name));
		return;
	}
	sb_add(b, v[i].name, v[i].plen);
	sb_add(b, "[", 1);
	while (i < j) {
		size_t k = i + 1;
		int w = v[i].ndig;

		while (k < j && v[k].num == v[k - 1].num + 1 &&
		       fits_width(&v[k], w))
			k++;
		if (!first)
			sb_add(b, ",", 1);
		first = false;
		sb_num(b, v[i].num, w);
		if (k - i > 1) {
			sb_add(b, "-", 1);
			sb_num(b, v[k - 1].num, w);
		}
		i = k;
	}
	sb_add(b, "]", 1);
}

char *ibmc__hostlist_compress(char *const *names, size_t count)
{
	struct sbuf b = { 0 };
	struct split *v;
	size_t *first, slots, h, i, j;

	/* Group each name under the first name with the same prefix, found
	 * in a hash of the prefixes seen: scanning the earlier names was
	 * quadratic, seconds for 65536 names like "r[1-256]n[1-256]". */
	for (slots = 2; slots < count * 2; slots <<= 1)
		;
	v = calloc(count ? count : 1, sizeof(*v));
	first = calloc(slots, sizeof(*first)); /* index + 1; 0 = empty */
	if (!v || !first) {
		free(v);
		free(first);
		return NULL;
	}
	for (i = 0; i < count; i++) {
		split_name(names[i], &v[i]);
		v[i].pos = i;
		v[i].order = i;
		if (!v[i].ndig)
			continue;
		h = (size_t)ibmc__fnv1a64(IBMC__FNV64_INIT, names[i],
					  v[i].plen) & (slots - 1);
		while (first[h] && !same_prefix(&v[first[h] - 1], &v[i]))
			h = (h + 1) & (slots - 1);
		if (first[h])
			v[i].order = first[h] - 1;
		else
			first[h] = i + 1;
	}
	free(first);
	qsort(v, count, sizeof(*v), split_cmp);

	sb_add(&b, "", 0);
	for (i = 0; i < count; i = j) {
		j = i + 1;
		if (v[i].ndig)
			while (j < count && v[j].order == v[i].order)
				j++;
		if (i)
			sb_add(&b, ",", 1);
		emit_group(&b, v, i, j);
	}
	free(v);
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}
