// The placing passes keep the module they placed, with themselves as the
// pipeline that placed it; dist-hybrid with pp > 1 records the whole
// strategy (the passes it runs after dist-pipeline change the programs).
// RUN: dist-opt %examples/mlp.mlir --dist-pipeline="stages=2 microbatches=2" 2>%t.remarks | FileCheck %s --check-prefix=PIPE
// PIPE: module @placement_source attributes {dist.placement = {fingerprint = "{{[0-9a-f]+}}", pipeline = "builtin.module(dist-pipeline{dp=1 microbatches=2 schedule=1f1b stages=2 tp=1 virtual-stages=1 zero=0})"}} {
// PIPE-NEXT: func.func @train_step(
// PIPE-NOT: dist.fragment
// PIPE: }
// RUN: dist-opt %examples/mlp.mlir --dist-parameter-server="ps=2 workers=2" 2>%t.remarks | FileCheck %s --check-prefix=PS
// PS: module @placement_source attributes {dist.placement = {fingerprint = "{{[0-9a-f]+}}", pipeline = "builtin.module(dist-parameter-server{min-shard-bytes={{[0-9]+}} mode=sync partitioner=min-size ps=2 shards={{[0-9]+}} workers=2})"}} {
// RUN: dist-opt %examples/mlp.mlir --dist-hybrid="pp=2 dp=2 microbatches=2" 2>%t.remarks | FileCheck %s --check-prefix=HYBRID
// HYBRID: module @placement_source attributes {dist.placement = {fingerprint = "{{[0-9a-f]+}}", pipeline = "builtin.module(dist-hybrid{bucket-mb={{.*}} dp=2 {{.*}} pp=2 {{.*}}})"}} {

// The pass itself: the pipeline it is given, the fingerprint of the
// programs as they are (here, after bucketing).
// RUN: dist-opt %examples/mlp.mlir --dist-pipeline="stages=2 microbatches=2 dp=2" --dist-bucket-collectives --dist-record-placement="pipeline=builtin.module(my-strategy)" 2>%t.remarks | FileCheck %s --check-prefix=RECORD
// RECORD: module @placement_source attributes {dist.placement = {fingerprint = "{{[0-9a-f]+}}", pipeline = "builtin.module(my-strategy)"}} {

// Refused: no kept module, no pipeline.
// RUN: not dist-opt %examples/mlp.mlir --dist-record-placement="pipeline=builtin.module(dist-pipeline)" 2>&1 | FileCheck %s --check-prefix=NOSOURCE
// NOSOURCE: error: dist-record-placement: the module keeps no 'dist.placement' module: run it after a placing pass (dist-pipeline, dist-parameter-server)
// RUN: not dist-opt %examples/mlp.mlir --dist-pipeline="stages=2 microbatches=2" --dist-record-placement 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: error: dist-record-placement: needs pipeline=<the strategy as a textual pipeline on builtin.module>
