#!/bin/bash
# The session's last device call on the final tree (no base: the goals are absolute): the gpu
# tests, N rounds of the cuda deepseek bench and refill phases (20.1, 20.2), the refill-free
# diagnostic (20.2), the cuda reference bench and the host-CPU benches (20.3, 20.4 scaling).
# usage on the device: source benchmarks/results/s44/refill_ab/setup.sh; OUT=$OUT N=3 bash benchmarks/results/s57/device_final.sh
EXTRA=1 exec bash "$(dirname "$0")/device_refill.sh"
