// RUN: dist-opt %s -split-input-file -verify-diagnostics

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
// expected-error @+1 {{axis 'pipe' is fixed twice in one place}}
func.func private @f() attributes {dist.place = #dist.place<@pipe, pipe = 0, pipe = 1>}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
// expected-error @+1 {{axis 'pipe' has the negative coordinate -1}}
func.func private @f() attributes {dist.place = #dist.place<@pipe, pipe = -1>}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
// expected-error @+1 {{'func.func' op coordinate 2 is out of range for axis 'pipe' of size 2}}
func.func private @f() attributes {dist.place = #dist.place<@pipe, pipe = 2>}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
// expected-error @+1 {{'func.func' op axis 'stage' is not an axis of mesh @pipe}}
func.func private @f() attributes {dist.place = #dist.place<@pipe, stage = 0>}

// -----

// expected-error @+1 {{'func.func' op mesh @nowhere does not exist}}
func.func private @f() attributes {dist.place = #dist.place<@nowhere, pipe = 0>}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
// expected-error @+1 {{'dist.place' must be a #dist.place on a function}}
func.func private @f() attributes {dist.place = 1 : i64}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
// expected-error @+1 {{'dist.schedule' must be a dictionary on a function}}
func.func private @f() attributes {dist.schedule = [1]}

// -----

// The module placed programs were made from is nested in theirs.
// expected-error @+1 {{'func.func' op 'dist.placement' must be on a module nested in a module of placed programs}}
func.func private @f() attributes {dist.placement = {pipeline = "", fingerprint = ""}}

// -----

// expected-error @+1 {{'builtin.module' op 'dist.placement' must be a dictionary of two strings, 'pipeline' and 'fingerprint'}}
module @placement_source attributes {dist.placement = {pipeline = "builtin.module(dist-pipeline{stages=2})"}} {
}

// -----

// expected-error @+1 {{a schedule unit's stage and microbatch must be non-negative, got stage -1 and microbatch 0}}
func.func private @f() attributes {u = #dist.unit<F, stage = -1, microbatch = 0>}

// -----

// expected-error @+2 {{expected ::mlir::dist::UnitKind to be one of: F, B, W, U}}
// expected-error @+1 {{failed to parse Dist_ScheduleUnitAttr parameter 'kind'}}
func.func private @f() attributes {u = #dist.unit<X, stage = 0, microbatch = 0>}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @f(%a: tensor<2xf32>) {
  // expected-error @+1 {{'dist.fragment' op input #0 is 'tensor<2xf32>' but the body's argument #0 is 'tensor<3xf32>'}}
  dist.fragment on #dist.place<@pipe, pipe = 0> (%a) : (tensor<2xf32>) -> () {
  ^bb0(%b: tensor<3xf32>):
    dist.yield
  }
  return
}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @f() {
  // expected-error @+1 {{'dist.fragment' op is an update unit (U), which runs once per step (microbatch 0, got 2) unless it serves a request in a dist.serve}}
  dist.fragment on #dist.place<@pipe, pipe = 0> unit #dist.unit<U, stage = 0, microbatch = 2> () : () -> () {
    dist.yield
  }
  return
}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @f(%a: tensor<2xf32>) {
  // expected-error @+1 {{'dist.fragment' op has 1 inputs but its body takes 0 arguments}}
  dist.fragment on #dist.place<@pipe, pipe = 0> (%a) : (tensor<2xf32>) -> () {
    dist.yield
  }
  return
}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  %r = dist.fragment on #dist.place<@pipe, pipe = 0> (%a) : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%b: tensor<2xf32>):
    // expected-error @+1 {{'dist.yield' op yields 0 values but the fragment has 1 results}}
    dist.yield
  }
  return %r : tensor<2xf32>
}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @f(%a: tensor<2xf32>) -> tensor<3xf32> {
  %r = dist.fragment on #dist.place<@pipe, pipe = 0> (%a) : (tensor<2xf32>) -> tensor<3xf32> {
  ^bb0(%b: tensor<2xf32>):
    // expected-error @+1 {{'dist.yield' op yields 'tensor<2xf32>' as value #0 but the fragment's result #0 is 'tensor<3xf32>'}}
    dist.yield %b : tensor<2xf32>
  }
  return %r : tensor<3xf32>
}

// -----

// A fragment reads only its inputs.
dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-note @+1 {{required by region isolation constraints}}
  %r = dist.fragment on #dist.place<@pipe, pipe = 0> () : () -> tensor<2xf32> {
    // expected-error @+1 {{using value defined outside the region}}
    dist.yield %a : tensor<2xf32>
  }
  return %r : tensor<2xf32>
}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @f(%a: tensor<2xf32>) {
  dist.fragment on #dist.place<@pipe, pipe = 0> (%a) : (tensor<2xf32>) -> () {
  ^bb0(%b: tensor<2xf32>):
    // expected-error @+1 {{'dist.send' op must not be inside a 'dist.fragment'}}
    dist.send %b to #dist.place<@pipe, pipe = 1> channel = 0 : tensor<2xf32>
    dist.yield
  }
  return
}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @f(%a: tensor<2xf32>) attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  // expected-error @+1 {{'dist.fragment' op is placed on #dist.place<@pipe, pipe = 1> inside the program of #dist.place<@pipe, pipe = 0>}}
  dist.fragment on #dist.place<@pipe, pipe = 1> (%a) : (tensor<2xf32>) -> () {
  ^bb0(%b: tensor<2xf32>):
    dist.yield
  }
  return
}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @f(%a: tensor<2xf32>) {
  // expected-error @+1 {{'dist.fragment' op coordinate 5 is out of range for axis 'pipe' of size 2}}
  dist.fragment on #dist.place<@pipe, pipe = 5> (%a) : (tensor<2xf32>) -> () {
  ^bb0(%b: tensor<2xf32>):
    dist.yield
  }
  return
}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @f(%a: tensor<2xf32>) attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  // expected-error @+1 {{'dist.send' op sends to its own place #dist.place<@pipe, pipe = 0>}}
  dist.send %a to #dist.place<@pipe, pipe = 0> channel = 0 : tensor<2xf32>
  return
}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
dist.mesh @other {axes = ["pipe"], shape = array<i64: 2>}
func.func @f() -> tensor<2xf32> attributes {dist.place = #dist.place<@pipe, pipe = 0>} {
  // expected-error @+1 {{'dist.recv' op receives from #dist.place<@other, pipe = 1> is on another mesh than its program (#dist.place<@pipe, pipe = 0>)}}
  %r = dist.recv from #dist.place<@other, pipe = 1> channel = 0 : tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @f(%a: tensor<2xf32>) {
  // expected-error @+1 {{'dist.send' op channel must be non-negative, got -3}}
  dist.send %a to #dist.place<@pipe, pipe = 1> channel = -3 : tensor<2xf32>
  return
}

// -----

dist.mesh @pipe {axes = ["pipe"], shape = array<i64: 2>}
func.func @f() -> tensor<2xf32> {
  // expected-error @+1 {{'dist.recv' op axis 'data' is not an axis of mesh @pipe}}
  %r = dist.recv from #dist.place<@pipe, data = 1> channel = 0 : tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

// expected-error @+1 {{a block needs one offset per dim of the global shape, got 1 offsets and 2 dims}}
func.func @f(%a: tensor<2x4xf32> {dist.block = #dist.block<offsets = [0], shape = [4, 4]>}) attributes {dist.place = #dist.place<@cluster, task = 0>}

// -----

// expected-error @+1 {{dim 1 of a block has offset -1 in size 4: both must be non-negative}}
func.func @f(%a: tensor<2x4xf32> {dist.block = #dist.block<offsets = [0, -1], shape = [4, 4]>}) attributes {dist.place = #dist.place<@cluster, task = 0>}

// -----

dist.mesh @cluster {axes = ["task"], shape = array<i64: 2>}
// expected-error @+1 {{'func.func' op argument #0: dim 0 of 'tensor<3x4xf32>' at offset 2 does not fit in 4 (#dist.block<offsets = [2, 0], shape = [4, 4]>)}}
func.func @f(%a: tensor<3x4xf32> {dist.block = #dist.block<offsets = [2, 0], shape = [4, 4]>}) attributes {dist.place = #dist.place<@cluster, task = 0>} {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'dist.block' belongs on a placed program (a function with 'dist.place')}}
func.func @f(%a: tensor<2x4xf32> {dist.block = #dist.block<offsets = [2, 0], shape = [4, 4]>}) {
  return
}

// -----

dist.mesh @cluster {axes = ["task"], shape = array<i64: 2>}
// expected-error @+1 {{'func.func' op result #0: #dist.block<offsets = [0], shape = [4]> has 1 dims but the value is 'tensor<2x4xf32>'}}
func.func @f(%a: tensor<2x4xf32>) -> (tensor<2x4xf32> {dist.block = #dist.block<offsets = [0], shape = [4]>}) attributes {dist.place = #dist.place<@cluster, task = 0>} {
  return %a : tensor<2x4xf32>
}

// -----

dist.mesh @cluster {axes = ["task"], shape = array<i64: 2>}
// expected-error @+1 {{'func.func' op argument #0: has both 'dist.block' and 'dist.sharding'}}
func.func @f(%a: tensor<2x4xf32> {dist.block = #dist.block<offsets = [2, 0], shape = [4, 4]>, dist.sharding = #dist.sharding<@cluster, [[], []]>}) attributes {dist.place = #dist.place<@cluster, task = 0>} {
  return
}

// -----

dist.mesh @cluster {axes = ["task"], shape = array<i64: 3>}
func.func @f(%w: tensor<4xf32>) -> tensor<4xf32> attributes {dist.place = #dist.place<@cluster, task = 0>} {
  // expected-error @+1 {{'dist.serve' op has 1 cases, 2 peers and 2 channels: one of each per peer}}
  %r = dist.serve from [#dist.place<@cluster, task = 1>, #dist.place<@cluster, task = 2>] channels [0, 1] count 2 (%w) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%v: tensor<4xf32>):
    %g = dist.recv from #dist.place<@cluster, task = 1> channel = 0 : tensor<4xf32>
    dist.yield %g : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

dist.mesh @cluster {axes = ["task"], shape = array<i64: 3>}
func.func @f(%w: tensor<4xf32>) -> tensor<4xf32> attributes {dist.place = #dist.place<@cluster, task = 0>} {
  // expected-error @+1 {{'dist.serve' op count must be at least 1, got 0}}
  %r = dist.serve from [#dist.place<@cluster, task = 1>] channels [0] count 0 (%w) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%v: tensor<4xf32>):
    %g = dist.recv from #dist.place<@cluster, task = 1> channel = 0 : tensor<4xf32>
    dist.yield %g : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

dist.mesh @cluster {axes = ["task"], shape = array<i64: 3>}
func.func @f(%w: tensor<4xf32>) -> tensor<4xf32> attributes {dist.place = #dist.place<@cluster, task = 0>} {
  // expected-error @+1 {{'dist.serve' op serves #dist.place<@cluster, task = 1> twice}}
  %r = dist.serve from [#dist.place<@cluster, task = 1>, #dist.place<@cluster, task = 1>] channels [0, 1] count 2 (%w) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%v: tensor<4xf32>):
    %g = dist.recv from #dist.place<@cluster, task = 1> channel = 0 : tensor<4xf32>
    dist.yield %g : tensor<4xf32>
  }, {
  ^bb0(%v: tensor<4xf32>):
    %g = dist.recv from #dist.place<@cluster, task = 1> channel = 1 : tensor<4xf32>
    dist.yield %g : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

dist.mesh @cluster {axes = ["task"], shape = array<i64: 3>}
func.func @f(%w: tensor<4xf32>) -> tensor<4xf32> attributes {dist.place = #dist.place<@cluster, task = 0>} {
  // expected-error @+1 {{'dist.serve' op serves its own place #dist.place<@cluster, task = 0>}}
  %r = dist.serve from [#dist.place<@cluster, task = 0>] channels [0] count 1 (%w) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%v: tensor<4xf32>):
    dist.yield %v : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

dist.mesh @cluster {axes = ["task"], shape = array<i64: 3>}
func.func @f(%w: tensor<4xf32>) -> tensor<4xf32> attributes {dist.place = #dist.place<@cluster, task = 0>} {
  %r = dist.serve from [#dist.place<@cluster, task = 1>] channels [0] count 1 (%w) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%v: tensor<4xf32>):
    %g = dist.recv from #dist.place<@cluster, task = 1> channel = 0 : tensor<4xf32>
    // expected-error @+1 {{'dist.send' op talks to #dist.place<@cluster, task = 2> in the case of #dist.place<@cluster, task = 1>: a case talks to its peer only}}
    dist.send %g to #dist.place<@cluster, task = 2> channel = 1 : tensor<4xf32>
    dist.yield %g : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

dist.mesh @cluster {axes = ["task"], shape = array<i64: 3>}
func.func @f(%w: tensor<4xf32>) -> tensor<4xf32> attributes {dist.place = #dist.place<@cluster, task = 0>} {
  // expected-error @+1 {{'dist.serve' op case #0 must receive the probed message (channel 5 from #dist.place<@cluster, task = 1>) once, it does 0 times}}
  %r = dist.serve from [#dist.place<@cluster, task = 1>] channels [5] count 1 (%w) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%v: tensor<4xf32>):
    %g = dist.recv from #dist.place<@cluster, task = 1> channel = 0 : tensor<4xf32>
    dist.yield %g : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

dist.mesh @cluster {axes = ["task"], shape = array<i64: 3>}
func.func @f(%w: tensor<4xf32>) -> tensor<4xf32> attributes {dist.place = #dist.place<@cluster, task = 0>} {
  // expected-error @+1 {{'dist.serve' op case #0 must take the carried values as arguments (1, of the inits' types)}}
  %r = dist.serve from [#dist.place<@cluster, task = 1>] channels [0] count 1 (%w) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%v: tensor<2xf32>):
    %g = dist.recv from #dist.place<@cluster, task = 1> channel = 0 : tensor<4xf32>
    dist.yield %g : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

dist.mesh @cluster {axes = ["task"], shape = array<i64: 3>}
func.func @f(%w: tensor<4xf32>) -> tensor<4xf32> attributes {dist.place = #dist.place<@cluster, task = 0>} {
  %r = dist.serve from [#dist.place<@cluster, task = 1>] channels [0] count 1 (%w) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%v: tensor<4xf32>):
    %g = dist.recv from #dist.place<@cluster, task = 1> channel = 0 : tensor<2xf32>
    // expected-error @+1 {{'dist.yield' op yields 'tensor<2xf32>' as value #0 but the dist.serve's result #0 is 'tensor<4xf32>'}}
    dist.yield %g : tensor<2xf32>
  }
  return %r : tensor<4xf32>
}

// -----

dist.mesh @cluster {axes = ["task"], shape = array<i64: 3>}
func.func @f(%w: tensor<4xf32>) -> tensor<4xf32> attributes {dist.place = #dist.place<@cluster, task = 0>} {
  %r = dist.serve from [#dist.place<@cluster, task = 1>] channels [0] count 1 (%w) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%v: tensor<4xf32>):
    %g = dist.recv from #dist.place<@cluster, task = 1> channel = 0 : tensor<4xf32>
    // expected-error @+1 {{'train.add' op is in a case of dist.serve, which holds only dist.fragment, dist.send and dist.recv}}
    %s = train.add %v, %g : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    dist.yield %s : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

dist.mesh @cluster {axes = ["task"], shape = array<i64: 3>}
func.func @f(%w: tensor<4xf32>) -> tensor<4xf32> attributes {dist.place = #dist.place<@cluster, task = 0>} {
  // expected-error @+1 {{'dist.serve' op its results must have the types of its inits (the values carried from case to case)}}
  %r = dist.serve from [#dist.place<@cluster, task = 1>] channels [0] count 1 (%w) : (tensor<4xf32>) -> tensor<2xf32> {
  ^bb0(%v: tensor<4xf32>):
    %g = dist.recv from #dist.place<@cluster, task = 1> channel = 0 : tensor<2xf32>
    dist.yield %g : tensor<2xf32>
  }
  return %w : tensor<4xf32>
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'dist.cache' is a unit attribute of a placed program's argument or result}}
func.func @f(%w: tensor<4xf32> {dist.cache}) {
  return
}
