// RUN: dist-opt %s --dist-verify -split-input-file -verify-diagnostics

// Matched transfers in a deadlock-free order pass.
dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @p0(%a: tensor<2xf32>) -> tensor<2xf32> attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  dist.send %a to #dist.place<@pipe, pipe = 1> channel = 0 : tensor<2xf32>
  %b = dist.recv from #dist.place<@pipe, pipe = 1> channel = 1 : tensor<2xf32>
  return %b : tensor<2xf32>
}
func.func @p1() attributes {dist.place = #dist.place<@pipe, pipe = 1>} {
  %a = dist.recv from #dist.place<@pipe, pipe = 0> channel = 0 : tensor<2xf32>
  dist.send %a to #dist.place<@pipe, pipe = 0> channel = 1 : tensor<2xf32>
  return
}

// -----

// Both programs receive before they send: a cycle of waits.
dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @p0(%a: tensor<2xf32>) -> tensor<2xf32> attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  // expected-error @+1 {{the programs deadlock: @p0 (pipe = 0) waits at channel 1 for @p1 (pipe = 1); @p1 (pipe = 1) waits at channel 0 for @p0 (pipe = 0)}}
  %b = dist.recv from #dist.place<@pipe, pipe = 1> channel = 1 : tensor<2xf32>
  dist.send %a to #dist.place<@pipe, pipe = 1> channel = 0 : tensor<2xf32>
  return %b : tensor<2xf32>
}
func.func @p1(%c: tensor<2xf32>) attributes {dist.place = #dist.place<@pipe, pipe = 1>} {
  // expected-note @+1 {{waiting here}}
  %a = dist.recv from #dist.place<@pipe, pipe = 0> channel = 0 : tensor<2xf32>
  dist.send %c to #dist.place<@pipe, pipe = 0> channel = 1 : tensor<2xf32>
  return
}

// -----

// A three-program cycle behind a program that finishes.
dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 4>}
func.func @p0() attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  // expected-error @+1 {{the programs deadlock: @p0 (pipe = 0) waits at channel 2 for @p2 (pipe = 2); @p2 (pipe = 2) waits at channel 1 for @p1 (pipe = 1); @p1 (pipe = 1) waits at channel 0 for @p0 (pipe = 0)}}
  %a = dist.recv from #dist.place<@pipe, pipe = 2> channel = 2 : tensor<2xf32>
  dist.send %a to #dist.place<@pipe, pipe = 1> channel = 0 : tensor<2xf32>
  return
}
func.func @p1() attributes {dist.place = #dist.place<@pipe, pipe = 1>} {
  // expected-note @+1 {{waiting here}}
  %a = dist.recv from #dist.place<@pipe, pipe = 0> channel = 0 : tensor<2xf32>
  dist.send %a to #dist.place<@pipe, pipe = 2> channel = 1 : tensor<2xf32>
  return
}
func.func @p2() attributes {dist.place = #dist.place<@pipe, pipe = 2>} {
  // expected-note @+1 {{waiting here}}
  %a = dist.recv from #dist.place<@pipe, pipe = 1> channel = 1 : tensor<2xf32>
  dist.send %a to #dist.place<@pipe, pipe = 0> channel = 2 : tensor<2xf32>
  return
}
func.func @p3() attributes {dist.place = #dist.place<@pipe, pipe = 3>} {
  return
}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @p0(%a: tensor<2xf32>) attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  // expected-error @+1 {{has no matching dist.recv (channel 4) in the program of #dist.place<@pipe, pipe = 1>}}
  dist.send %a to #dist.place<@pipe, pipe = 1> channel = 4 : tensor<2xf32>
  return
}
func.func @p1() attributes {dist.place = #dist.place<@pipe, pipe = 1>} {
  return
}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @p0(%a: tensor<2xf32>) attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  // expected-note @+1 {{the send}}
  dist.send %a to #dist.place<@pipe, pipe = 1> channel = 0 : tensor<2xf32>
  return
}
func.func @p1() -> tensor<3xf32> attributes {dist.place = #dist.place<@pipe, pipe = 1>} {
  // expected-error @+1 {{receives 'tensor<3xf32>' but its dist.send sends 'tensor<2xf32>'}}
  %a = dist.recv from #dist.place<@pipe, pipe = 0> channel = 0 : tensor<3xf32>
  return %a : tensor<3xf32>
}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @p0() -> tensor<2xf32> attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  // expected-error @+1 {{has no matching dist.send (channel 0) in the program of #dist.place<@pipe, pipe = 1>}}
  %a = dist.recv from #dist.place<@pipe, pipe = 1> channel = 0 : tensor<2xf32>
  return %a : tensor<2xf32>
}
func.func @p1() attributes {dist.place = #dist.place<@pipe, pipe = 1>} {
  return
}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @p0(%a: tensor<2xf32>) -> tensor<2xf32> attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  // expected-error @+1 {{is not placed: a program of #dist.place<@pipe, pipe = 0> holds only dist.fragment, dist.send, dist.recv and dist.serve}}
  %b = train.neg %a : (tensor<2xf32>) -> tensor<2xf32>
  return %b : tensor<2xf32>
}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @p0() attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  return
}
// expected-error @+1 {{is a second program of #dist.place<@pipe, pipe = 0> (the first is @p0)}}
func.func @q0() attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  return
}

// -----

// A server serving two workers in the order their requests arrive: each
// worker sends its request before it waits for the reply.
dist.mesh @cluster {axes = ["task"], shape = array<i64: 3>}
func.func @server(%w: tensor<2xf32>) -> tensor<2xf32> attributes {dist.place = #dist.place<@cluster, task = 0>} {
  %r = dist.serve from [#dist.place<@cluster, task = 1>, #dist.place<@cluster, task = 2>] channels [0, 1] count 2 (%w) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%v: tensor<2xf32>):
    %g = dist.recv from #dist.place<@cluster, task = 1> channel = 0 : tensor<2xf32>
    dist.send %g to #dist.place<@cluster, task = 1> channel = 2 : tensor<2xf32>
    dist.yield %g : tensor<2xf32>
  }, {
  ^bb0(%v: tensor<2xf32>):
    %g = dist.recv from #dist.place<@cluster, task = 2> channel = 1 : tensor<2xf32>
    dist.send %g to #dist.place<@cluster, task = 2> channel = 3 : tensor<2xf32>
    dist.yield %g : tensor<2xf32>
  }
  return %r : tensor<2xf32>
}
func.func @worker0(%a: tensor<2xf32>) -> tensor<2xf32> attributes {dist.place = #dist.place<@cluster, task = 1>} {
  dist.send %a to #dist.place<@cluster, task = 0> channel = 0 : tensor<2xf32>
  %b = dist.recv from #dist.place<@cluster, task = 0> channel = 2 : tensor<2xf32>
  return %b : tensor<2xf32>
}
func.func @worker1(%a: tensor<2xf32>) -> tensor<2xf32> attributes {dist.place = #dist.place<@cluster, task = 2>} {
  dist.send %a to #dist.place<@cluster, task = 0> channel = 1 : tensor<2xf32>
  %b = dist.recv from #dist.place<@cluster, task = 0> channel = 3 : tensor<2xf32>
  return %b : tensor<2xf32>
}

// -----

// A worker that waits for the server's reply before it sends its request:
// the server waits for the request of any worker it has not served.
dist.mesh @cluster {axes = ["task"], shape = array<i64: 3>}
func.func @server(%w: tensor<2xf32>) -> tensor<2xf32> attributes {dist.place = #dist.place<@cluster, task = 0>} {
  // expected-error @+1 {{the programs deadlock: @server (task = 0) waits at channel 1 for @worker1 (task = 2); @worker1 (task = 2) waits at channel 3 for @server (task = 0)}}
  %r = dist.serve from [#dist.place<@cluster, task = 1>, #dist.place<@cluster, task = 2>] channels [0, 1] count 2 (%w) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%v: tensor<2xf32>):
    %g = dist.recv from #dist.place<@cluster, task = 1> channel = 0 : tensor<2xf32>
    dist.send %g to #dist.place<@cluster, task = 1> channel = 2 : tensor<2xf32>
    dist.yield %g : tensor<2xf32>
  }, {
  ^bb0(%v: tensor<2xf32>):
    %g = dist.recv from #dist.place<@cluster, task = 2> channel = 1 : tensor<2xf32>
    dist.send %g to #dist.place<@cluster, task = 2> channel = 3 : tensor<2xf32>
    dist.yield %g : tensor<2xf32>
  }
  return %r : tensor<2xf32>
}
func.func @worker0(%a: tensor<2xf32>) -> tensor<2xf32> attributes {dist.place = #dist.place<@cluster, task = 1>} {
  dist.send %a to #dist.place<@cluster, task = 0> channel = 0 : tensor<2xf32>
  %b = dist.recv from #dist.place<@cluster, task = 0> channel = 2 : tensor<2xf32>
  return %b : tensor<2xf32>
}
func.func @worker1(%a: tensor<2xf32>) -> tensor<2xf32> attributes {dist.place = #dist.place<@cluster, task = 2>} {
  // expected-note @+1 {{waiting here}}
  %b = dist.recv from #dist.place<@cluster, task = 0> channel = 3 : tensor<2xf32>
  dist.send %a to #dist.place<@cluster, task = 0> channel = 1 : tensor<2xf32>
  return %b : tensor<2xf32>
}

// -----

dist.mesh @cluster {axes = ["task"], shape = array<i64: 2>}
func.func @server(%w: tensor<2xf32>) -> tensor<2xf32> attributes {dist.place = #dist.place<@cluster, task = 0>} {
  // expected-error @+1 {{serves 2 requests of 1 peers: dist-verify checks programs whose step serves each peer once}}
  %r = dist.serve from [#dist.place<@cluster, task = 1>] channels [0] count 2 (%w) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%v: tensor<2xf32>):
    %g = dist.recv from #dist.place<@cluster, task = 1> channel = 0 : tensor<2xf32>
    dist.yield %g : tensor<2xf32>
  }
  return %r : tensor<2xf32>
}
func.func @worker0(%a: tensor<2xf32>) attributes {dist.place = #dist.place<@cluster, task = 1>} {
  dist.send %a to #dist.place<@cluster, task = 0> channel = 0 : tensor<2xf32>
  return
}
