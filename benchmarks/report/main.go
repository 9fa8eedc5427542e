// Command report turns benchstat's CSV summary of the benchmark suite into
// benchmarks/RESULTS.md: the machine and the command, a headline table of
// ratios, one table per workload, and the commands that reproduce the
// measurements run.sh does not make. It writes the whole file; nothing in it
// is edited by hand (the method is in benchmarks/README.md).
//
//	go run ./report -csv results/benchstat.csv -machine results/machine.txt \
//	    -command "go test ..." -out RESULTS.md
package main

import (
	"bytes"
	"flag"
	"log"
	"os"
	"strings"
)

func main() {
	csvPath := flag.String("csv", "results/benchstat.csv", "benchstat -format csv output")
	machinePath := flag.String("machine", "results/machine.txt", "machine description, one fact per line")
	command := flag.String("command", "", "the command that produced the results")
	outPath := flag.String("out", "RESULTS.md", "file to write")
	flag.Parse()

	data, err := os.ReadFile(*csvPath)
	if err != nil {
		log.Fatal(err)
	}
	res, err := parseCSV(data)
	if err != nil {
		log.Fatal(err)
	}
	machine, err := os.ReadFile(*machinePath)
	if err != nil {
		log.Fatal(err)
	}
	var out bytes.Buffer
	writeFile(&out, res, strings.TrimSpace(string(machine)), *command)
	if err := os.WriteFile(*outPath, out.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
}
