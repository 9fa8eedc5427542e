package main

// The summary: every target and every headline comparison, grouped by
// verdict, in one short list that other documents quote whole (the rows
// behind, missed and inconclusive beside those met and ahead).

import (
	"bytes"
	"fmt"
	"strings"
)

// summaryItem is one line of the summary.
type summaryItem struct {
	status, text string
}

// summaryItems collects the targets and the headline comparisons.
func summaryItems(r *results) []summaryItem {
	var items []summaryItem
	addTargets := func(rows []targetRow) {
		for _, t := range rows {
			text := t.what
			if t.figure != "" {
				text += ": " + t.figure
			}
			text += " (target " + t.target + ")"
			items = append(items, summaryItem{t.status, text})
		}
	}
	addTargets(ownTargets(r))
	addTargets(curveTargetRows(r))
	addTargets(stormTargetRows(r))
	addTargets(cpuTargetRows(r))
	for _, row := range headlineRows(r) {
		status := statusOf(row.verdict)
		if status == "" {
			status = statusInconclusive
		}
		text := fmt.Sprintf("%s, %s: cacheguard %s against %s", row.label(), row.h.measure, row.cg, row.best)
		if v := strings.TrimPrefix(row.verdict, status); v != "" {
			text += strings.TrimPrefix(v, ":")
		}
		items = append(items, summaryItem{status, text})
	}
	return items
}

// writeSummary writes the list, one group per verdict in statusOrder.
func writeSummary(w *bytes.Buffer, r *results) {
	items := summaryItems(r)
	fmt.Fprintln(w, "### Summary: every target and comparison by verdict")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "The targets and headline rows of this file, grouped by verdict (the rules are those of the tables they come from); quote this list whole, not the rows met alone.")
	fmt.Fprintln(w)
	for _, status := range statusOrder {
		var group []string
		for _, it := range items {
			if it.status == status {
				group = append(group, it.text)
			}
		}
		if len(group) == 0 {
			continue
		}
		fmt.Fprintf(w, "**%s** (%d):\n\n", status, len(group))
		for _, g := range group {
			fmt.Fprintf(w, "- %s\n", g)
		}
		fmt.Fprintln(w)
	}
}
