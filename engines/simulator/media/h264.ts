// A deliberately tiny H.264 (Baseline) encoder. Key frames are IDR pictures whose macroblocks are all
// I_PCM (raw samples, no transform or prediction), and the frames between them are P pictures made of
// one run of skipped macroblocks (a repeat of the previous picture). That is enough for a real,
// playable stream without a codec library: the bitstream syntax below follows ITU-T H.264 7.3.

export interface YuvFrame {
  /** Coded size, multiples of 16. */
  width: number;
  height: number;
  /** Planar 4:2:0: width*height luma bytes, then Cb and Cr at quarter size each. */
  data: Uint8Array;
}

export interface H264Parameters {
  sps: Buffer;
  pps: Buffer;
  profileIdc: number;
  constraintFlags: number;
  levelIdc: number;
}

const PROFILE_BASELINE = 66;
const CONSTRAINED_BASELINE_FLAGS = 0xc0; // constraint_set0 and constraint_set1
const LEVEL_3_1 = 31;
const LOG2_MAX_FRAME_NUM = 4;
const MB_TYPE_I_PCM = 25;
const NAL_SLICE = 1;
const NAL_IDR = 5;
const NAL_SPS = 7;
const NAL_PPS = 8;

class BitWriter {
  private readonly bytes: number[] = [];
  private current = 0;
  private used = 0;

  bit(b: number): void {
    this.current = (this.current << 1) | (b & 1);
    this.used++;
    if (this.used === 8) {
      this.bytes.push(this.current);
      this.current = 0;
      this.used = 0;
    }
  }

  bits(value: number, count: number): void {
    for (let i = count - 1; i >= 0; i--) this.bit((value >>> i) & 1);
  }

  /** Unsigned Exp-Golomb, ue(v). */
  ue(value: number): void {
    const v = value + 1;
    const len = 32 - Math.clz32(v);
    this.bits(0, len - 1);
    this.bits(v, len);
  }

  /** Signed Exp-Golomb, se(v). */
  se(value: number): void {
    this.ue(value <= 0 ? -2 * value : 2 * value - 1);
  }

  get aligned(): boolean {
    return this.used === 0;
  }

  alignZero(): void {
    while (this.used !== 0) this.bit(0);
  }

  byteAligned(data: Uint8Array): void {
    for (const b of data) this.bytes.push(b);
  }

  /** rbsp_trailing_bits(): a stop bit, then zero bits to the byte boundary. */
  finish(): Buffer {
    this.bit(1);
    this.alignZero();
    return Buffer.from(this.bytes);
  }
}

/** Wraps an RBSP as a NAL unit payload, inserting emulation-prevention bytes (7.4.1). */
function nalUnit(refIdc: number, type: number, rbsp: Uint8Array): Buffer {
  const out: number[] = [(refIdc << 5) | type];
  let zeros = 0;
  for (const b of rbsp) {
    if (zeros >= 2 && b <= 3) {
      out.push(3);
      zeros = 0;
    }
    out.push(b);
    zeros = b === 0 ? zeros + 1 : 0;
  }
  return Buffer.from(out);
}

/** SPS + PPS for a picture of displayWidth×displayHeight (cropped from the 16-aligned coded size). */
export function h264Parameters(displayWidth: number, displayHeight: number): H264Parameters {
  const mbWidth = Math.ceil(displayWidth / 16);
  const mbHeight = Math.ceil(displayHeight / 16);
  const cropRight = (mbWidth * 16 - displayWidth) / 2; // 4:2:0 crop units are 2 samples
  const cropBottom = (mbHeight * 16 - displayHeight) / 2;
  if (!Number.isInteger(cropRight) || !Number.isInteger(cropBottom)) {
    throw new Error('video dimensions must be even');
  }
  const s = new BitWriter();
  s.bits(PROFILE_BASELINE, 8);
  s.bits(CONSTRAINED_BASELINE_FLAGS, 8);
  s.bits(LEVEL_3_1, 8);
  s.ue(0); // seq_parameter_set_id
  s.ue(LOG2_MAX_FRAME_NUM - 4);
  s.ue(2); // pic_order_cnt_type 2: output order = decoding order, no POC syntax in slices
  s.ue(1); // max_num_ref_frames
  s.bit(0); // gaps_in_frame_num_value_allowed_flag
  s.ue(mbWidth - 1);
  s.ue(mbHeight - 1);
  s.bit(1); // frame_mbs_only_flag
  s.bit(1); // direct_8x8_inference_flag
  const cropping = cropRight > 0 || cropBottom > 0;
  s.bit(cropping ? 1 : 0);
  if (cropping) {
    s.ue(0);
    s.ue(cropRight);
    s.ue(0);
    s.ue(cropBottom);
  }
  s.bit(0); // vui_parameters_present_flag: timing comes from the container
  const sps = nalUnit(3, NAL_SPS, s.finish());

  const p = new BitWriter();
  p.ue(0); // pic_parameter_set_id
  p.ue(0); // seq_parameter_set_id
  p.bit(0); // entropy_coding_mode_flag: CAVLC
  p.bit(0); // bottom_field_pic_order_in_frame_present_flag
  p.ue(0); // num_slice_groups_minus1
  p.ue(0); // num_ref_idx_l0_default_active_minus1
  p.ue(0); // num_ref_idx_l1_default_active_minus1
  p.bit(0); // weighted_pred_flag
  p.bits(0, 2); // weighted_bipred_idc
  p.se(0); // pic_init_qp_minus26
  p.se(0); // pic_init_qs_minus26
  p.se(0); // chroma_qp_index_offset
  p.bit(1); // deblocking_filter_control_present_flag
  p.bit(0); // constrained_intra_pred_flag
  p.bit(0); // redundant_pic_cnt_present_flag
  const pps = nalUnit(3, NAL_PPS, p.finish());

  return {
    sps,
    pps,
    profileIdc: PROFILE_BASELINE,
    constraintFlags: CONSTRAINED_BASELINE_FLAGS,
    levelIdc: LEVEL_3_1,
  };
}

/** An IDR picture of I_PCM macroblocks. frameNum resets to 0 at every IDR. */
export function idrPicture(frame: YuvFrame, idrPicId: number): Buffer {
  const w = new BitWriter();
  w.ue(0); // first_mb_in_slice
  w.ue(7); // slice_type: I (all slices of the picture)
  w.ue(0); // pic_parameter_set_id
  w.bits(0, LOG2_MAX_FRAME_NUM); // frame_num
  w.ue(idrPicId & 0xffff);
  w.bit(0); // no_output_of_prior_pics_flag
  w.bit(0); // long_term_reference_flag
  w.se(0); // slice_qp_delta
  w.ue(1); // disable_deblocking_filter_idc: off
  const mbWidth = frame.width / 16;
  const mbHeight = frame.height / 16;
  const lumaSize = frame.width * frame.height;
  const chromaWidth = frame.width / 2;
  const chromaSize = lumaSize / 4;
  const mb = new Uint8Array(384);
  for (let my = 0; my < mbHeight; my++) {
    for (let mx = 0; mx < mbWidth; mx++) {
      w.ue(MB_TYPE_I_PCM);
      w.alignZero(); // pcm_alignment_zero_bit
      let k = 0;
      for (let y = 0; y < 16; y++) {
        const row = (my * 16 + y) * frame.width + mx * 16;
        for (let x = 0; x < 16; x++) mb[k++] = frame.data[row + x]!;
      }
      for (const plane of [lumaSize, lumaSize + chromaSize]) {
        for (let y = 0; y < 8; y++) {
          const row = plane + (my * 8 + y) * chromaWidth + mx * 8;
          for (let x = 0; x < 8; x++) mb[k++] = frame.data[row + x]!;
        }
      }
      w.byteAligned(mb);
    }
  }
  return nalUnit(3, NAL_IDR, w.finish());
}

/** A P picture in which every macroblock is skipped: it repeats the previous picture. */
export function repeatPicture(width: number, height: number, frameNum: number): Buffer {
  const w = new BitWriter();
  w.ue(0); // first_mb_in_slice
  w.ue(5); // slice_type: P (all slices of the picture)
  w.ue(0); // pic_parameter_set_id
  w.bits(frameNum % (1 << LOG2_MAX_FRAME_NUM), LOG2_MAX_FRAME_NUM);
  w.bit(0); // num_ref_idx_active_override_flag
  w.bit(0); // ref_pic_list_modification_flag_l0
  w.bit(0); // adaptive_ref_pic_marking_mode_flag: sliding window
  w.se(0); // slice_qp_delta
  w.ue(1); // disable_deblocking_filter_idc
  w.ue(Math.ceil(width / 16) * Math.ceil(height / 16)); // mb_skip_run covering the whole picture
  return nalUnit(2, NAL_SLICE, w.finish());
}
