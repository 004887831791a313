#!/bin/sh
# Refresh assets/echarts.min.js from the npm package `echarts` (Apache-2.0),
# the version go-echarts v2 targets. Run from analysis/htmlreport:
#   go generate ./analysis/htmlreport
# then update echartsSHA256 in assets.go (TestEmbeddedEcharts says the new sum).
set -eu
version=${1:?usage: update-echarts.sh VERSION}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "echarts@$version" >/dev/null && tar xzf "echarts-$version.tgz")
cp "$tmp/package/dist/echarts.min.js" assets/echarts.min.js
cp "$tmp/package/LICENSE" assets/LICENSE-echarts
cp "$tmp/package/NOTICE" assets/NOTICE-echarts
sha256sum assets/echarts.min.js
