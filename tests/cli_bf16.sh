#!/bin/sh
# cli_bf16: device.precision = bf16 (the dense GEMMs on bf16 operands with
# fp32 sums; the CPU emulates them). The fake device (the CPU's own
# operations) trains exactly as the CPU's emulation: the losses at
# tolerance 0 and the final state bit for bit, HSTU and SASRec at 2 ranks;
# bf16 differs from fp32 (the rounding is applied) but stays close (0.01
# relative over 20 steps of tiny.in); fp32 written out is the default, bit
# for bit. device.tf32, the deprecated alias: a warning naming where it was
# set; contradicting device.precision: an error naming the file and line.
. "$(dirname "$0")/lib.sh"
need_mpirun
tiny_data
COMMON="data.path=$T/tiny.h5 train.epochs=10 train.max_steps=20 train.log_every=1 train.final_eval=off"
train() { np=$1; shift; timeout 300 "$MPIRUN" -np "$np" "$FS" train "$IN" $COMMON "$@"; }
ck() { echo "output.checkpoint_dir=$T/ck-$1"; }

for model in hstu sasrec; do
    loss=softmax; [ $model = sasrec ] && loss=bce
    M="model.type=$model train.loss=$loss"
    expect_ok train 2 $M device.type=cpu device.precision=bf16 output.metrics="$T/$model-cpu.jsonl" \
        $(ck $model-cpu)
    grep -q "device.precision = bf16: the dense GEMMs take bf16 operands" "$T/out" &&
        pass "$model: bf16 reported" || fail "$model: bf16 not reported: $(head -c 300 "$T/out")"
    expect_ok train 2 $M device.type=fake device.share=on device.precision=bf16 \
        output.metrics="$T/$model-fake.jsonl" $(ck $model-fake)
    same_losses "$T/$model-cpu.jsonl" "$T/$model-fake.jsonl" "$model bf16: fake vs CPU" 0 0
    same_state "$T/ck-$model-cpu/ckpt-20.h5" "$T/ck-$model-fake/ckpt-20.h5" "$model bf16: fake vs CPU"
    expect_ok train 2 $M device.type=cpu output.metrics="$T/$model-fp32.jsonl"
    same_losses "$T/$model-fp32.jsonl" "$T/$model-cpu.jsonl" "$model: bf16 vs fp32" 0 0.01
    if cmp -s "$T/la" "$T/lb"; then fail "$model: bf16 gives the fp32 losses (no rounding?)"
    else pass "$model: bf16 losses differ from fp32's"; fi
    expect_ok train 2 $M device.type=cpu device.precision=fp32 output.metrics="$T/$model-fp32e.jsonl"
    same_losses "$T/$model-fp32.jsonl" "$T/$model-fp32e.jsonl" "$model: fp32 explicit = default" 0 0
done

# the deprecated alias
expect_ok train 1 device.type=cpu device.tf32=on train.max_steps=2
grep -q "command line: device.tf32 is deprecated: write device.precision = tf32" "$T/err" &&
    pass "device.tf32: a deprecation warning" || fail "no deprecation warning: $(head -c 300 "$T/err")"
grep -q "notice: device.precision = tf32: the CPU backend has no TF32" "$T/out" &&
    pass "tf32 on the CPU: a notice" || fail "tf32 on the CPU: no notice"
expect_ok train 1 device.type=cpu device.tf32=off device.precision=fp32 train.max_steps=2
expect_error "command line: device.tf32 = on (a deprecated alias of device.precision = tf32) contradicts device.precision = bf16 (command line)" \
    train 1 device.type=cpu device.tf32=on device.precision=bf16
{ cat "$IN"; printf '\n[device]\ntf32 = off\nprecision = bf16\n'; } > "$T/both.in"
expect_error "$T/both.in:" timeout 300 "$MPIRUN" -np 1 "$FS" train "$T/both.in" $COMMON device.type=cpu
grep -q "device.tf32 = off (a deprecated alias of device.precision = fp32) contradicts device.precision = bf16 ($T/both.in:" "$T/err" &&
    pass "the error names the file and lines" || fail "the error: $(head -c 400 "$T/err")"
expect_error "device.precision = 'fp16': expected one of fp32|tf32|bf16" train 1 device.precision=fp16
finish
