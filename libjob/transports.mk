# SPDX-License-Identifier: BSD-3-Clause
# libjob transports and bootstraps (included from libjob/local.mk).
