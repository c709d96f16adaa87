// goprof.go - a small Go program that writes a CPU profile and a heap
// profile with runtime/pprof, for ember's pprof reader tests. The work has
// recursion, inlined helpers (several Lines per Location) and allocations
// from distinct call sites; the CPU profile's samples carry the label
// "phase" (pprof.Do), the heap profile's their allocation size ("bytes").
//
// usage: go run goprof.go CPU.pb.gz HEAP.pb.gz
package main

import (
	"context"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

var sink []byte
var total uint64

// small enough to be inlined into its callers
func mix(x uint64) uint64 { return x*6364136223846793005 + 1442695040888963407 }

func spin(n int) uint64 {
	h := uint64(n)
	for i := 0; i < n; i++ {
		h = mix(h) ^ uint64(i)
	}
	return h
}

func descend(depth, n int) uint64 {
	if depth == 0 {
		return spin(n)
	}
	return descend(depth-1, n) + 1
}

func alpha() { total += spin(200000) }
func beta()  { total += descend(5, 300000) }

func allocSmall() { sink = make([]byte, 64) }
func allocLarge() { sink = make([]byte, 1<<16) }

func main() {
	runtime.MemProfileRate = 1 // every allocation: a repeatable heap profile
	cpu, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		panic(err)
	}
	ctx := context.Background()
	for start := time.Now(); time.Since(start) < 700*time.Millisecond; {
		pprof.Do(ctx, pprof.Labels("phase", "alpha"), func(context.Context) { alpha() })
		pprof.Do(ctx, pprof.Labels("phase", "beta"), func(context.Context) { beta() })
	}
	pprof.StopCPUProfile()
	cpu.Close()
	for i := 0; i < 1000; i++ {
		allocSmall()
		if i%10 == 0 {
			allocLarge()
		}
	}
	heap, err := os.Create(os.Args[2])
	if err != nil {
		panic(err)
	}
	if err := pprof.WriteHeapProfile(heap); err != nil {
		panic(err)
	}
	heap.Close()
}
