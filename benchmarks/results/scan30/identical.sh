#!/usr/bin/env bash
# The report is unchanged: scan28's check (cmp of JSON, SARIF and the text report with its
# elapsed seconds cut) against the base e138b65 (git archive at /tmp/base_scan30). From the root:
#   bash benchmarks/results/scan30/identical.sh > benchmarks/results/scan30/identical.txt 2>&1
sed -e 's#/tmp/base_scan28#/tmp/base_scan30#g' benchmarks/results/scan28/identical.sh | bash
