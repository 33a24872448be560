package dashboard

import (
	"strconv"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// barChart is a small server-rendered SVG bar chart: the template draws
// Bars inside a Width×Height viewBox. The same numbers are always shown in
// a table beside it.
type barChart struct {
	Caption       string
	Width, Height int
	Max           int64
	Bars          []bar
}

type bar struct {
	Label              string
	Value              int64
	X, Y, W, H, LabelY int
	LabelX, ValueY     int
}

const (
	chartHeight = 120 // the bars' area
	chartLabels = 20  // below it, the day labels
	barWidth    = 28
	barGap      = 8
)

// installsChart draws the installs of the app per day (as advertiser).
func installsChart(days []xpromo.DayStats) barChart {
	c := barChart{Caption: "Installs of your app per UTC day", Height: chartHeight + chartLabels + 14}
	for _, d := range days {
		if d.Advertiser.Installs > c.Max {
			c.Max = d.Advertiser.Installs
		}
	}
	var total int64
	for i, d := range days {
		v := d.Advertiser.Installs
		total += v
		h := 0
		if c.Max > 0 {
			h = int(v * chartHeight / c.Max)
		}
		x := barGap + i*(barWidth+barGap)
		top := 14 + chartHeight - h
		c.Bars = append(c.Bars, bar{Label: d.Day[5:], Value: v, X: x, W: barWidth, Y: top, H: h,
			LabelX: x + barWidth/2, LabelY: 14 + chartHeight + 14, ValueY: top - 3})
	}
	c.Width = barGap + len(days)*(barWidth+barGap)
	c.Caption += ": " + plural(total, "install") + " from " + days[0].Day + " to " + days[len(days)-1].Day + "."
	return c
}

func plural(n int64, what string) string {
	s := what + "s"
	if n == 1 {
		s = what
	}
	return strconv.FormatInt(n, 10) + " " + s
}
