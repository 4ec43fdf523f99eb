#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Seed text lines for PaddleOCR's models: digits drawn with a 5x7 bitmap font (4x scale, black on
# white) into H x W images, normalised as PaddleOCR does ((x / 255 - 0.5) / 0.5, so [-1, 1]),
# 3 channels, one row per text, saved as float32 .npy (N x 3*H*W); or OUT.png: the first text's
# image as an 8-bit grey PNG (not normalised), as a user's photo of a line would come.
#   text_seeds.py OUT.npy H W TEXT...      e.g. text_seeds.py seeds.npy 48 192 314159 2718
import numpy as np, struct, sys, zlib
F={'0':["01110","10001","10011","10101","11001","10001","01110"],'1':["00100","01100","00100","00100","00100","00100","01110"],
'2':["01110","10001","00001","00010","00100","01000","11111"],'3':["11110","00001","00001","01110","00001","00001","11110"],
'4':["00010","00110","01010","10010","11111","00010","00010"],'5':["11111","10000","11110","00001","00001","10001","01110"],
'6':["00110","01000","10000","11110","10001","10001","01110"],'7':["11111","00001","00010","00100","01000","01000","01000"],
'8':["01110","10001","10001","01110","10001","10001","01110"],'9':["01110","10001","10001","01111","00001","00010","01100"]}
out, H, W = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows=[]
for txt in sys.argv[4:]:
    img=np.full((H,W),255,np.uint8); x0=8
    for ch in txt:
        g=np.kron(np.array([[c=='1' for c in r] for r in F[ch]]),np.ones((4,4),bool)); y0=(H-g.shape[0])//2
        img[y0:y0+g.shape[0],x0:x0+g.shape[1]][g]=0; x0+=g.shape[1]+4
    if out.endswith('.png'):
        chunk=lambda t,d: struct.pack('>I',len(d))+t+d+struct.pack('>I',zlib.crc32(t+d))
        raw=b''.join(b'\0'+img[r].tobytes() for r in range(H))
        open(out,'wb').write(b'\x89PNG\r\n\x1a\n'+chunk(b'IHDR',struct.pack('>IIBBBBB',W,H,8,0,0,0,0))+
                             chunk(b'IDAT',zlib.compress(raw))+chunk(b'IEND',b''))
        sys.exit(0)
    x=(img.astype(np.float32)/255-0.5)/0.5
    rows.append(np.broadcast_to(x,(3,H,W)).reshape(-1))
np.save(out, np.stack(rows).astype(np.float32))
