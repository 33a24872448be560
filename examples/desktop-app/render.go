package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/xpromo/xpromo/sdk/slots"
)

// consoleRenderer is the publisher app's render hook (slots.Renderer): its
// "native template" is a box on the terminal with the creative's title,
// description, icon, call to action and the "Sponsored" label, which must
// always be visible. The user of this demo always clicks.
type consoleRenderer struct {
	w      io.Writer
	indent string
}

// Render shows ad and returns the user's choice: a click on its call to
// action.
func (r consoleRenderer) Render(ctx context.Context, ad slots.Ad) (slots.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return slots.NotShown, nil // the offer lapsed before the slot came up
	}
	lines := []string{
		ad.SponsoredLabel,
		"",
		ad.Title,
		ad.Description,
	}
	if ad.IconURL != "" {
		lines = append(lines, "icon: "+ad.IconURL)
	}
	lines = append(lines, "", "[ "+ad.CTA+" ]")
	drawBox(r.w, r.indent, lines)
	return slots.Clicked, nil
}

// drawBox draws lines in a box.
func drawBox(w io.Writer, indent string, lines []string) {
	width := 0
	for _, l := range lines {
		width = max(width, utf8.RuneCountInString(l))
	}
	fmt.Fprintf(w, "%s┌%s┐\n", indent, strings.Repeat("─", width+2))
	for _, l := range lines {
		fmt.Fprintf(w, "%s│ %s%s │\n", indent, l, strings.Repeat(" ", width-utf8.RuneCountInString(l)))
	}
	fmt.Fprintf(w, "%s└%s┘\n", indent, strings.Repeat("─", width+2))
}
