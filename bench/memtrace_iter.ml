(* memtrace_iter.ml - memtrace's own reader at full speed, for
   bench/run_memtrace.sh: Trace.Reader.iter over a whole trace, backtraces
   decoded, counting events and summing samples and words (what a profile
   needs), printing "EVENTS SAMPLES WORDS". *)
module T = Trace

let () =
  let r = T.Reader.open_ ~filename:Sys.argv.(1) in
  let events = ref 0 and samples = ref 0 and words = ref 0 in
  T.Reader.iter r (fun _ ev ->
      incr events;
      match ev with
      | T.Event.Alloc { nsamples; length; _ } ->
        samples := !samples + nsamples;
        words := !words + length
      | _ -> ());
  Printf.printf "%d %d %d\n" !events !samples !words;
  T.Reader.close r
