package htmlreport

import _ "embed" // echarts.min.js is embedded into every page

//go:generate sh assets/update-echarts.sh 5.4.3

// EchartsVersion is the version of Apache ECharts (npm package `echarts`)
// embedded in assets/echarts.min.js: the one go-echarts v2 targets.
const EchartsVersion = "5.4.3"

// echartsSHA256 is the SHA-256 of assets/echarts.min.js as shipped in the
// npm package echarts@5.4.3 (dist/echarts.min.js).
const echartsSHA256 = "1156429a16a38cb8604dcc6518c19406d4226142d908f8edd2e3531443c54d19"

// echartsJS is Apache ECharts (Apache-2.0, assets/LICENSE-echarts),
// inlined into each page so the report needs no network.
//
//go:embed assets/echarts.min.js
var echartsJS string
