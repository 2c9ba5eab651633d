// The bounds of the multipart uploads (SPEC limits): image edits' images and mask, and the input
// reference of a video, read as they stream in (./upload-form.ts).
import type { UploadLimits } from './upload-form.ts';

export const MAX_EDIT_FILES = 10;
export const MAX_EDIT_FILE_BYTES = 20 * 1024 * 1024;

/** The edit form's bounds: the images and a mask, the fields, and the whole body (225 MB: the files and 5 MB). */
export const EDIT_LIMITS: UploadLimits = {
  fileBytes: MAX_EDIT_FILE_BYTES,
  files: MAX_EDIT_FILES + 1,
  fields: 32,
  fieldBytes: 128 * 1024,
  totalBytes: (MAX_EDIT_FILES + 1) * MAX_EDIT_FILE_BYTES + 5 * 1024 * 1024,
};
