# SPDX-License-Identifier: BSD-3-Clause
# Included by Makefile.am (one fragment per part, so parts are edited apart).
