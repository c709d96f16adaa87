// memviews.go - a Go program that writes a heap profile (runtime/pprof,
// every allocation sampled: MemProfileRate 1) with known allocation sites,
// for ember's memory views (tests/golden/memviews.py): 200 rounds of
//   holdSmall  1000 B kept           (in use at the end)
//   holdLarge  100000 * SCALE B kept (in use at the end)
//   temporary  5000 B dropped        (allocated, not in use)
// under main.outer (the first two) and main.main. Go rounds each size up
// to its size class; the profile says the rounded sizes, and so do the
// tools compared.
//
// usage: go run memviews.go OUT.pb.gz SCALE
package main

import (
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
)

var keep [][]byte
var sink []byte

//go:noinline
func holdSmall() { keep = append(keep, make([]byte, 1000)) }

//go:noinline
func holdLarge(scale int) { keep = append(keep, make([]byte, 100000*scale)) }

//go:noinline
func temporary() { sink = make([]byte, 5000) }

//go:noinline
func outer(scale int) {
	holdSmall()
	holdLarge(scale)
}

func main() {
	runtime.MemProfileRate = 1
	scale, err := strconv.Atoi(os.Args[2])
	if err != nil {
		panic(err)
	}
	keep = make([][]byte, 0, 400)
	for i := 0; i < 200; i++ {
		outer(scale)
		temporary()
	}
	sink = nil
	runtime.GC() // the profile's in-use values are as of the last GC
	f, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		panic(err)
	}
	f.Close()
	runtime.KeepAlive(keep)
}
