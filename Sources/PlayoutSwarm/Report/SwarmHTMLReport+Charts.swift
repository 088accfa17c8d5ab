extension SwarmHTMLReport {
    /// One line of a chart over time: its points (a nil value breaks the line), colour and dash.
    struct Series {
        var label: String
        var colour: String
        var dash: String?
        var width: Double = 2
        var points: [(x: Double, y: Double?)]
    }

    /// A range on an axis with its tick step.
    struct Axis: Equatable {
        var low: Double
        var high: Double
        var step: Double

        /// The ticks from `low` to `high` (at most 60).
        var ticks: [Double] {
            let steps = ((high - low) / step).rounded()
            guard steps.isFinite, steps >= 0 else { return [low] }
            return (0...Int(Swift.min(60, steps))).map { low + Double($0) * step }
        }

        /// An axis over `values` with about `ticks` steps of 1, 2 or 5 × a power of ten. It starts
        /// at 0 when the values are not negative and the lowest is under half the highest (so a
        /// small change does not look big); `ceiling` caps it (100 for a percentage); an `integral`
        /// axis (counts) steps by whole numbers.
        static func covering(_ values: [Double], ticks: Int = 5, ceiling: Double? = nil, integral: Bool = false) -> Axis {
            let finite = values.filter(\.isFinite)
            guard var low = finite.min(), var high = finite.max() else { return Axis(low: 0, high: 1, step: 0.2) }
            if low >= 0, low <= high * 0.5 { low = 0 }
            if high - low <= Swift.abs(high) * 1e-12 {
                // One value: a band around it.
                if high == 0 { return Axis(low: 0, high: 1, step: 0.2) }
                let pad = Swift.abs(high) * 0.1
                (low, high) = (low >= 0 && low - pad < 0 ? 0 : low - pad, high + pad)
            }
            let raw = niceStep((high - low) / Double(Swift.max(1, ticks)))
            let step = integral ? Swift.max(1, raw) : raw
            var axis = Axis(low: (low / step).rounded(.down) * step, high: (high / step).rounded(.up) * step, step: step)
            if let ceiling, high <= ceiling, axis.high > ceiling { axis.high = ceiling }
            guard axis.low.isFinite, axis.high.isFinite, axis.high > axis.low, ((axis.high - axis.low) / step) <= 60 else {
                return Axis(low: low, high: Swift.max(high, low + 1), step: Swift.max(high - low, 1))
            }
            return axis
        }
    }

    /// 1, 2 or 5 × a power of ten, the smallest such at least `raw` (1 for a raw step that is not
    /// a positive finite number).
    static func niceStep(_ raw: Double) -> Double {
        guard raw.isFinite, raw >= 1e-250, raw <= 1e250 else { return raw.isFinite && raw > 1e250 ? raw : 1 }
        var power = 1.0
        var turns = 0
        while power > raw, turns < 700 {
            power /= 10
            turns += 1
        }
        while power * 10 <= raw, turns < 1_400 {
            power *= 10
            turns += 1
        }
        for factor in [1.0, 2, 5] where power * factor >= raw { return power * factor }
        return power * 10
    }

    /// The intervals in which the tester was saturated: each saturated sample covers the time
    /// since the sample before it (from the start for the first); touching intervals merge.
    static func saturatedIntervals(_ samples: [SwarmSample]) -> [(from: Double, to: Double)] {
        var intervals: [(from: Double, to: Double)] = []
        var previous = 0.0
        for sample in samples {
            let at = seconds(sample.elapsed)
            if sample.tester.saturated, at.isFinite {
                let from = Swift.min(previous, at)
                if let last = intervals.last, last.to >= from {
                    intervals[intervals.count - 1].to = Swift.max(last.to, at)
                } else {
                    intervals.append((from, at))
                }
            }
            previous = at
        }
        return intervals
    }

    /// A line chart over elapsed time: hand-written SVG with a grid, both axes labelled with their
    /// units, a legend, and the tester's saturated intervals shaded.
    struct TimeChart {
        static let width = 620.0
        static let height = 280.0
        static let left = 70.0
        static let right = 16.0
        static let top = 36.0
        static let bottom = 46.0
        static let plotWidth = width - left - right
        static let plotHeight = height - top - bottom
        static let saturatedFill = "#f9c9a0"

        var series: [Series]
        /// The y axis' label with its unit, e.g. `start-up time (s)`.
        var yLabel: String
        /// Elapsed seconds shown, first to last sample.
        var xLow: Double
        var xHigh: Double
        var shaded: [(from: Double, to: Double)]
        /// The highest value the y axis may reach when the values stay under it (100 for %).
        var ceiling: Double?
        /// What the chart shows, for screen readers.
        var label: String
        /// Unique in the document: names the chart's clip path.
        var id: Int
        /// The values are counts: the y axis steps by whole numbers.
        var integral = false

        func svg() -> String {
            let w = Self.width, h = Self.height, left = Self.left, top = Self.top
            let plotW = Self.plotWidth, plotH = Self.plotHeight
            let yAxis = Axis.covering(series.flatMap { $0.points.compactMap(\.y) }, ceiling: ceiling, integral: integral)
            let minutes = xHigh - xLow > 600
            let xDivisor = minutes ? 60.0 : 1
            let xAxis = Axis.covering([xLow / xDivisor, xHigh / xDivisor], ticks: 8)
            let xPlaces = SwarmHTMLReport.places(forStep: xAxis.step)
            let yPlaces = SwarmHTMLReport.places(forStep: yAxis.step)
            func x(_ seconds: Double) -> Double {
                left + (seconds / xDivisor - xAxis.low) / (xAxis.high - xAxis.low) * plotW
            }
            func y(_ value: Double) -> Double {
                top + plotH - (value - yAxis.low) / (yAxis.high - yAxis.low) * plotH
            }
            let c = SwarmHTMLReport.coordinate
            var out = "<svg class=\"chart\" width=\"\(c(w))\" height=\"\(c(h))\" viewBox=\"0 0 \(c(w)) \(c(h))\" role=\"img\" aria-label=\"\(SwarmHTMLReport.escape(label))\">\n"
            out += "<defs><clipPath id=\"clip\(id)\"><rect x=\"\(c(left))\" y=\"\(c(top))\" width=\"\(c(plotW))\" height=\"\(c(plotH))\"/></clipPath></defs>\n"
            // Saturated intervals first, under the grid and the lines.
            for interval in shaded {
                let from = Swift.max(left, x(interval.from))
                let to = Swift.min(left + plotW, x(interval.to))
                guard to >= from else { continue }
                out += "<rect class=\"sat\" x=\"\(c(from))\" y=\"\(c(top))\" width=\"\(c(Swift.max(1.5, to - from)))\" height=\"\(c(plotH))\" fill=\"\(Self.saturatedFill)\" fill-opacity=\"0.55\"/>\n"
            }
            for tick in yAxis.ticks {
                out += "<line x1=\"\(c(left))\" y1=\"\(c(y(tick)))\" x2=\"\(c(left + plotW))\" y2=\"\(c(y(tick)))\" stroke=\"#e3e3e3\"/>"
                out += "<text x=\"\(c(left - 6))\" y=\"\(c(y(tick) + 4))\" text-anchor=\"end\">\(SwarmHTMLReport.trimmed(tick, places: yPlaces))</text>\n"
            }
            for tick in xAxis.ticks {
                out += "<line x1=\"\(c(x(tick * xDivisor)))\" y1=\"\(c(top + plotH))\" x2=\"\(c(x(tick * xDivisor)))\" y2=\"\(c(top + plotH + 5))\" stroke=\"#555\"/>"
                out += "<text x=\"\(c(x(tick * xDivisor)))\" y=\"\(c(top + plotH + 19))\" text-anchor=\"middle\">\(SwarmHTMLReport.trimmed(tick, places: xPlaces))</text>\n"
            }
            out += "<rect x=\"\(c(left))\" y=\"\(c(top))\" width=\"\(c(plotW))\" height=\"\(c(plotH))\" fill=\"none\" stroke=\"#888\"/>\n"
            out += "<text x=\"\(c(left + plotW / 2))\" y=\"\(c(h - 6))\" text-anchor=\"middle\" class=\"axis\">elapsed (\(minutes ? "min" : "s"))</text>\n"
            out += "<text transform=\"translate(15 \(c(top + plotH / 2))) rotate(-90)\" text-anchor=\"middle\" class=\"axis\">\(SwarmHTMLReport.escape(SwarmHTMLReport.truncated(yLabel, to: 36)))</text>\n"
            out += "<g clip-path=\"url(#clip\(id))\" fill=\"none\" stroke-linecap=\"round\" stroke-linejoin=\"round\">\n"
            var drawn = 0
            for line in series {
                let pixels = line.points.map { point in (x: x(point.x), y: point.y.flatMap { $0.isFinite ? y($0) : nil }) }
                let d = SwarmHTMLReport.pathData(SwarmHTMLReport.decimated(pixels, columns: plotW))
                guard !d.isEmpty else { continue }
                drawn += 1
                let dash = line.dash.map { " stroke-dasharray=\"\($0)\"" } ?? ""
                out += "<path class=\"series\" d=\"\(d)\" stroke=\"\(line.colour)\" stroke-width=\"\(c(line.width))\"\(dash)><title>\(SwarmHTMLReport.escape(line.label))</title></path>\n"
            }
            out += "</g>\n"
            if drawn == 0 {
                out += "<text x=\"\(c(left + plotW / 2))\" y=\"\(c(top + plotH / 2))\" text-anchor=\"middle\" class=\"axis\">no viewer had a value</text>\n"
            }
            out += legend()
            out += "</svg>"
            return out
        }

        /// The legend above the plot, left to right: each line's swatch and name, then the
        /// saturated shading when there is any.
        func legend() -> String {
            let c = SwarmHTMLReport.coordinate
            var x = Self.left
            let y = 18.0
            var out = ""
            for line in series {
                let dash = line.dash.map { " stroke-dasharray=\"\($0)\"" } ?? ""
                out += "<line x1=\"\(c(x))\" y1=\"\(c(y))\" x2=\"\(c(x + 22))\" y2=\"\(c(y))\" stroke=\"\(line.colour)\" stroke-width=\"\(c(Swift.max(2, line.width)))\"\(dash)/>"
                let text = SwarmHTMLReport.truncated(line.label, to: 24)
                out += "<text x=\"\(c(x + 27))\" y=\"\(c(y + 4))\">\(SwarmHTMLReport.escape(text))</text>\n"
                x += 40 + Double(text.count) * 6.6
            }
            if !shaded.isEmpty {
                out += "<rect x=\"\(c(x))\" y=\"\(c(y - 7))\" width=\"22\" height=\"14\" fill=\"\(Self.saturatedFill)\"/>"
                out += "<text x=\"\(c(x + 27))\" y=\"\(c(y + 4))\">tester saturated</text>\n"
            }
            return out
        }
    }

    /// At most two points per pixel column of each unbroken run of points (the lowest and the
    /// highest, in time order), so a long run draws the same picture with a bounded path.
    static func decimated(_ points: [(x: Double, y: Double?)], columns: Double) -> [(x: Double, y: Double?)] {
        guard Double(points.count) > columns * 2 else { return points }
        var out: [(x: Double, y: Double?)] = []
        var column: [(x: Double, y: Double)] = []
        var columnIndex = Int.min
        func flush() {
            guard let first = column.first else { return }
            var lowest = first
            var highest = first
            for point in column {
                if point.y < lowest.y { lowest = point }
                if point.y > highest.y { highest = point }
            }
            let pair = lowest.x <= highest.x ? [lowest, highest] : [highest, lowest]
            out.append((pair[0].x, pair[0].y))
            if column.count > 1 { out.append((pair[1].x, pair[1].y)) }
            column.removeAll(keepingCapacity: true)
        }
        for point in points {
            guard let y = point.y else {
                flush()
                out.append((point.x, nil))
                continue
            }
            let index = point.x.isFinite ? Int(Swift.max(-1e9, Swift.min(1e9, point.x.rounded(.down)))) : 0
            if index != columnIndex { flush() }
            columnIndex = index
            column.append((point.x, y))
        }
        flush()
        return out
    }

    /// An SVG path's data for `points` (pixels): `M x y` at each start, then the following points
    /// (implicit line-to); a nil value breaks the line. A lone point is a zero-length segment, which
    /// a round cap draws as a dot.
    static func pathData(_ points: [(x: Double, y: Double?)]) -> String {
        var d = ""
        var drawing = false
        var lone = false
        for point in points {
            guard let y = point.y, y.isFinite, point.x.isFinite else {
                if lone { d += "h0" }
                drawing = false
                lone = false
                continue
            }
            if drawing {
                d += " \(coordinate(point.x)) \(coordinate(y))"
                lone = false
            } else {
                d += "M\(coordinate(point.x)) \(coordinate(y))"
                drawing = true
                lone = true
            }
        }
        if lone { d += "h0" }
        return d
    }

    /// A histogram of `values` (seconds) with the 50th, 95th and 99th percentiles marked.
    static func histogram(_ values: [Double], label: String) -> String {
        let finite = values.filter(\.isFinite)
        guard let spread = Spread(finite), (spread.max - spread.min).isFinite else { return "" }
        let w = TimeChart.width, h = TimeChart.height, left = TimeChart.left, top = 56.0
        let plotW = TimeChart.plotWidth, plotH = h - top - TimeChart.bottom
        // About √n bins (5 to 40) of a round width, starting at a multiple of it.
        let wanted = Swift.min(40, Swift.max(5, Int(Double(finite.count).squareRoot())))
        var width = niceStep((spread.max - spread.min) / Double(wanted))
        if spread.max == spread.min { width = niceStep(Swift.max(Swift.abs(spread.max) * 0.05, 1e-3)) }
        let start = (spread.min / width).rounded(.down) * width
        /// A bin's index, whatever the arithmetic gave (NaN, ±∞ or a huge number).
        func bin(_ position: Double, below limit: Int) -> Int {
            guard position.isFinite else { return position == .infinity ? limit - 1 : 0 }
            return Int(Swift.max(0, Swift.min(Double(limit - 1), position.rounded(.down))))
        }
        let binCount = bin((spread.max - start) / width, below: 200) + 1
        var bins = [Int](repeating: 0, count: binCount)
        for value in finite {
            bins[bin((value - start) / width, below: binCount)] += 1
        }
        let xAxis = Axis.covering([start, start + Double(binCount) * width], ticks: 8)
        let yAxis = Axis.covering([0] + bins.map(Double.init), ticks: 4, integral: true)
        let xPlaces = places(forStep: xAxis.step)
        let yPlaces = places(forStep: yAxis.step)
        func x(_ value: Double) -> Double { left + (value - xAxis.low) / (xAxis.high - xAxis.low) * plotW }
        func y(_ value: Double) -> Double { top + plotH - (value - yAxis.low) / (yAxis.high - yAxis.low) * plotH }
        let c = coordinate
        var out = "<svg class=\"chart\" width=\"\(c(w))\" height=\"\(c(h))\" viewBox=\"0 0 \(c(w)) \(c(h))\" role=\"img\" aria-label=\"\(escape(label))\">\n"
        for tick in yAxis.ticks {
            out += "<line x1=\"\(c(left))\" y1=\"\(c(y(tick)))\" x2=\"\(c(left + plotW))\" y2=\"\(c(y(tick)))\" stroke=\"#e3e3e3\"/>"
            out += "<text x=\"\(c(left - 6))\" y=\"\(c(y(tick) + 4))\" text-anchor=\"end\">\(trimmed(tick, places: yPlaces))</text>\n"
        }
        for tick in xAxis.ticks {
            out += "<line x1=\"\(c(x(tick)))\" y1=\"\(c(top + plotH))\" x2=\"\(c(x(tick)))\" y2=\"\(c(top + plotH + 5))\" stroke=\"#555\"/>"
            out += "<text x=\"\(c(x(tick)))\" y=\"\(c(top + plotH + 19))\" text-anchor=\"middle\">\(trimmed(tick, places: xPlaces))</text>\n"
        }
        var bars = ""
        for (index, count) in bins.enumerated() where count > 0 {
            let from = x(start + Double(index) * width)
            let to = x(start + Double(index + 1) * width)
            bars += "M\(c(from + 0.5)) \(c(y(0)))V\(c(y(Double(count))))H\(c(Swift.max(from + 1, to - 0.5)))V\(c(y(0)))Z"
        }
        out += "<path class=\"series\" d=\"\(bars)\" fill=\"#8fb3de\" stroke=\"#4a7fbf\" stroke-width=\"0.8\"><title>viewers per \(trimmed(width, places: places(forStep: width))) s</title></path>\n"
        out += "<rect x=\"\(c(left))\" y=\"\(c(top))\" width=\"\(c(plotW))\" height=\"\(c(plotH))\" fill=\"none\" stroke=\"#888\"/>\n"
        // Percentile markers; labels in up to three rows so that close ones do not overlap.
        var rowEnds = [-Double.infinity, -Double.infinity, -Double.infinity]
        let markers = [("p50", spread.p50, percentileColours[0]), ("p95", spread.p95, percentileColours[1]), ("p99", spread.p99, percentileColours[2])]
        for (name, value, colour) in markers {
            let at = x(value)
            let text = "\(name) \(trimmed(value, places: 3)) s"
            let textWidth = Double(text.count) * 6.8
            let anchorStart = at + textWidth + 4 <= w - 4
            let extent = anchorStart ? (at + 3, at + 3 + textWidth) : (at - 3 - textWidth, at - 3)
            let row = rowEnds.firstIndex { $0 + 6 < extent.0 } ?? (rowEnds.indices.min { rowEnds[$0] < rowEnds[$1] } ?? 0)
            rowEnds[row] = extent.1
            let baseline = 16 + Double(row) * 14
            out += "<line x1=\"\(c(at))\" y1=\"\(c(baseline - 10))\" x2=\"\(c(at))\" y2=\"\(c(top + plotH))\" stroke=\"\(colour)\" stroke-width=\"2\" stroke-dasharray=\"5 3\"/>"
            out += "<text x=\"\(c(anchorStart ? at + 3 : at - 3))\" y=\"\(c(baseline))\" text-anchor=\"\(anchorStart ? "start" : "end")\" fill=\"\(colour)\" font-weight=\"bold\">\(escape(text))</text>\n"
        }
        out += "<text x=\"\(c(left + plotW / 2))\" y=\"\(c(h - 6))\" text-anchor=\"middle\" class=\"axis\">start-up time (s)</text>\n"
        out += "<text transform=\"translate(15 \(c(top + plotH / 2))) rotate(-90)\" text-anchor=\"middle\" class=\"axis\">viewers</text>\n"
        out += "</svg>"
        return out
    }

    /// Colours of p50, p95, p99 and max, everywhere in the report.
    static let percentileColours = ["#1f6fb4", "#e8830c", "#d62728", "#6f6f6f"]
}
