set terminal pngcairo size 960,640 enhanced font 'sans,11'
set output '/work/r4/plots/vgg-small-bytes.png'
set title "examples/vgg-small.yaml: test accuracy against MB pushed per worker (first seed's curves)" noenhanced
set xlabel 'MB pushed per worker (log scale)'
set ylabel 'test accuracy (%)'
set key bottom right
set grid
set logscale x
plot '/work/r4/plots/vgg-small-bytes.dat' index 0 with linespoints lw 2 pt 7 ps 0.5 title 'dense: 1x, mean final 92.45% (3 seeds)' noenhanced, \
     '/work/r4/plots/vgg-small-bytes.dat' index 1 with linespoints lw 2 pt 7 ps 0.5 title 'graddrop: 203x, mean final 92.15% (3 seeds)' noenhanced, \
     '/work/r4/plots/vgg-small-bytes.dat' index 2 with linespoints lw 2 pt 7 ps 0.5 title 'laco: 206x, mean final 92.57% (3 seeds)' noenhanced, \
     '/work/r4/plots/vgg-small-bytes.dat' index 3 with linespoints lw 2 pt 7 ps 0.5 title 'laco-at-signsgd-bytes: 32x, mean final 92.56% (3 seeds)' noenhanced, \
     '/work/r4/plots/vgg-small-bytes.dat' index 4 with linespoints lw 2 pt 7 ps 0.5 title 'signsgd: 32x, mean final 92.58% (3 seeds)' noenhanced
